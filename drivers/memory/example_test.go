package memory_test

import (
	"context"
	"fmt"
	"log"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/drivers/memory"
)

// Two stores of one name share their data, as two processes sharing one
// ZooKeeper ensemble would.
func Example() {
	ctx := context.Background()
	a, err := memory.OpenStore(&memory.Options{Name: "example"})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := store.Open("memory", map[string]string{"name": "example"})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	r1, err := a.Ranges().Next(ctx, "orders", 100)
	if err != nil {
		log.Fatal(err)
	}
	r2, err := b.Ranges().Next(ctx, "orders", 100)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r1, r2)
	// Output: {0 100} {100 200}
}
