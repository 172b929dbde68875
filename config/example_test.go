package config_test

import (
	"context"
	"fmt"
	"log"

	"github.com/cosid-go/store/config"
	_ "github.com/cosid-go/store/drivers/memory"
)

// A program's stores in its configuration file: ids for segment IDs and
// workers for Snowflake slots (both in memory here; a real file names a
// ZooKeeper ensemble). OpenFile does Load and Open in one call.
func Example() {
	doc := []byte(`
cosid:
  stores:
    ids:
      type: memory
      timeout: 2s
      options:
        name: example-config
    workers:
      type: memory
`)
	cfg, err := config.ParseYAML(doc)
	if err != nil {
		log.Fatal(err) // names the store and the field, e.g. an unknown field "timeot"
	}
	stores, err := cfg.Open()
	if err != nil {
		log.Fatal(err) // every store that failed; those opened were closed again
	}
	defer func() {
		if err := stores.Close(); err != nil {
			log.Print(err)
		}
	}()

	ids := stores["ids"]
	r, err := ids.Ranges().Next(context.Background(), "orders", 100)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("ids timeout:", ids.Timeout(), "first range:", r.Start, r.End)
	fmt.Println("workers timeout:", stores["workers"].Timeout())

	_, err = config.ParseYAML([]byte("stores: {ids: {type: memory, timeot: 2s}}"))
	fmt.Println(err)
	// Output:
	// ids timeout: 2s first range: 0 100
	// workers timeout: 3s
	// config: store "ids": unknown field "timeot" (known: type, timeout, options)
}
