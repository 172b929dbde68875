package zookeeper

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cosid-go/store/driver"
)

// TestStoreFormat: no fmt verb prints a store's fields, the auth option's
// credentials among them (%+v printed them as bytes).
func TestStoreFormat(t *testing.T) {
	s, err := prepare(map[string]string{"auth": "digest:alice:" + secretWord, "connectString": "zk1:2181", "root": "/ids"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var d driver.Store = s
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		for _, v := range []any{s, d} {
			out := fmt.Sprintf(f, v)
			if strings.Contains(out, secretWord) || strings.Contains(out, "alice") || strings.Contains(out, "97 108 105 99 101") {
				t.Errorf("Sprintf(%q) of %T = %q shows the credentials", f, v, out)
			}
		}
	}
	if got := fmt.Sprintf("%+v", s); got != "zookeeper store root=/ids servers=zk1:2181" {
		t.Errorf("%%+v = %q", got)
	}
}

// TestCreateOption: create=false is Open's; New, which makes no
// connection to check the root with, refuses it.
func TestCreateOption(t *testing.T) {
	cfg, err := parseOptions(map[string]string{"create": "false"}, true)
	if err != nil || cfg.create {
		t.Fatalf("create=false: %+v, %v", cfg.create, err)
	}
	if _, err := parseOptions(map[string]string{"create": "maybe"}, true); !errors.Is(err, driver.ErrInvalidArgument) || !strings.Contains(err.Error(), `"create"`) {
		t.Errorf("create=maybe: %v, want ErrInvalidArgument naming the option", err)
	}
	if _, err := parseOptions(map[string]string{"create": "false"}, false); !errors.Is(err, driver.ErrInvalidArgument) || !strings.Contains(err.Error(), "only to Open") {
		t.Errorf("New with create: %v, want ErrInvalidArgument", err)
	}
}
