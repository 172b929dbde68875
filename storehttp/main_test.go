package storehttp_test

import (
	"testing"

	"github.com/cosid-go/store/internal/testing/zktest"
)

func TestMain(m *testing.M) { zktest.Main(m) }
