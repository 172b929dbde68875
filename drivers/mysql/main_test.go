package mysql

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/cosid-go/store/internal/testing/mysqltest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(mysqltest.Wrap(m)) }
