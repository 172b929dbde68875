package memory_test

import (
	"context"
	"fmt"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/drivers/memory"
)

// Two stores of one name share their data, as two processes sharing one
// ZooKeeper ensemble would.
func Example() {
	ctx := context.Background()
	a, _ := store.OpenDriver(memory.New("example"))
	defer a.Close()
	b, _ := store.Open("memory", map[string]string{"name": "example"})
	defer b.Close()

	r1, _ := a.Ranges().Next(ctx, "orders", 100)
	r2, _ := b.Ranges().Next(ctx, "orders", 100)
	fmt.Println(r1, r2)
	// Output: {0 100} {100 200}
}
