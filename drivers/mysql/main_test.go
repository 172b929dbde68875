package mysql

import (
	"testing"

	"github.com/cosid-go/store/internal/testing/leakcheck"
	"github.com/cosid-go/store/internal/testing/mysqltest"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(mysqltest.Wrap(m)) }
