package postgres

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/cosid-go/store/internal/pgtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(pgtest.Wrap(m)) }
