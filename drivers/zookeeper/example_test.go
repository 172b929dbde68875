package zookeeper_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/drivers/zookeeper"
)

// Opening through the registry: the store makes its own connection and
// closes it with the store.
func Example_open() {
	st, err := store.Open("zookeeper", map[string]string{
		"connectString": "zk1:2181,zk2:2181,zk3:2181",
		"root":          "/cosid",
	}, store.WithTimeout(3*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	r, err := st.Ranges().Next(context.Background(), "orders", 1000)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("reserved [%d, %d)\n", r.Start, r.End)
}

// Using a connection the application already has: closing the store leaves
// it open, and the application closes it after the store.
func ExampleOpenStore() {
	conn, _, err := zk.Connect([]string{"zk1:2181"}, 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	st, err := zookeeper.OpenStore(conn, &zookeeper.Options{Root: "/cosid", SessionTimeout: 30 * time.Second},
		store.WithTimeout(3*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	next, sealed, err := st.Ranges().Current(context.Background(), "orders")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(next, sealed)
}
