package idgen

import "context"

// Generator is the shape every generator of this package has, as CosId's
// IdGenerator is for Java: a program switches between segment and Snowflake
// IDs in the line that opens one (see the Generator example).
type Generator interface {
	// NextID returns an ID that no other call returns, in this process or
	// in any other using the same store key or namespace.
	NextID(ctx context.Context) (int64, error)

	// Close stops the generator and gives back what it holds (a Snowflake
	// releases its slot, a Segment stops its fetch); NextID then returns
	// ErrClosed. ctx bounds the wait. Closing twice returns nil.
	Close(ctx context.Context) error
}

var (
	_ Generator = (*Segment)(nil)
	_ Generator = (*Snowflake)(nil)
)
