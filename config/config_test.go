package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/config"
	"github.com/cosid-go/store/driver"
)

// fakeStore counts closes so the test can see that a failed Open closed
// what it had opened.
type fakeStore struct{ closed *atomic.Int32 }

func (f fakeStore) Close() error { f.closed.Add(1); return nil }

var closes atomic.Int32

func init() {
	store.Register("configtest", func(opts map[string]string) (driver.Store, error) {
		o := driver.NewOptions(opts)
		fail := o.String("fail", "")
		o.String("connectString", "")
		o.Int("retry.maxRetries", 0)
		o.String("flag", "")
		if err := o.Err(); err != nil {
			return nil, err
		}
		if fail != "" {
			return nil, errors.New(fail)
		}
		return fakeStore{&closes}, nil
	})
}

const yamlDoc = `
cosid:
  stores:
    zk:
      type: configtest
      timeout: 5s
      options:
        connectString: zk-1:2181,zk-2:2181
        retry:
          maxRetries: 7
        flag: true
    mem:
      type: configtest
`

func TestParseYAML(t *testing.T) {
	c, err := config.ParseYAML([]byte(yamlDoc))
	if err != nil {
		t.Fatal(err)
	}
	want := &config.Config{Stores: map[string]config.StoreConfig{
		"zk": {Type: "configtest", Timeout: 5 * time.Second, Options: map[string]string{
			"connectString": "zk-1:2181,zk-2:2181", "retry.maxRetries": "7", "flag": "true"}},
		"mem": {Type: "configtest", Options: map[string]string{}},
	}}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Fatalf("config (-want +got):\n%s", diff)
	}
}

func TestParseJSONMatchesYAML(t *testing.T) {
	j := `{"stores": {"zk": {"type": "configtest", "timeout": "5s", "options":
		{"connectString": "zk-1:2181,zk-2:2181", "retry": {"maxRetries": 7}, "flag": true}},
		"mem": {"type": "configtest"}}}`
	cj, err := config.ParseJSON([]byte(j))
	if err != nil {
		t.Fatal(err)
	}
	cy, err := config.ParseYAML([]byte(yamlDoc))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cy, cj); diff != "" {
		t.Fatalf("json differs from yaml (-yaml +json):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field":   "stores: {a: {type: configtest, typo: 1}}",
		"missing type":    "stores: {a: {timeout: 1s}}",
		"bad timeout":     "stores: {a: {type: configtest, timeout: soon}}",
		"negative":        "stores: {a: {type: configtest, timeout: -1s}}",
		"list option":     "stores: {a: {type: configtest, options: {x: [1, 2]}}}",
		"no stores":       "other: 1",
		"both top levels": "stores: {a: {type: configtest}}\ncosid: {stores: {b: {type: configtest}}}",
	} {
		if _, err := config.ParseYAML([]byte(doc)); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
	if _, err := config.ParseYAML([]byte("stores: {a: {timeout: 1s}}")); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("error %v does not name the store", err)
	}
}

func TestOpenAll(t *testing.T) {
	c, err := config.ParseYAML([]byte(yamlDoc))
	if err != nil {
		t.Fatal(err)
	}
	stores, err := c.Open()
	if err != nil {
		t.Fatal(err)
	}
	if got := stores["zk"].Timeout(); got != 5*time.Second {
		t.Errorf("zk timeout = %v, want 5s", got)
	}
	if got := stores["mem"].Timeout(); got != store.DefaultTimeout {
		t.Errorf("mem timeout = %v, want default", got)
	}
	before := closes.Load()
	if err := stores.Close(); err != nil {
		t.Fatal(err)
	}
	if got := closes.Load() - before; got != 2 {
		t.Errorf("closed %d stores, want 2", got)
	}
}

func TestOpenFailureClosesAndReportsEvery(t *testing.T) {
	doc := `stores:
  a: {type: configtest}
  b: {type: configtest, options: {fail: "b is down"}}
  c: {type: configtest, options: {typo: 1}}
  d: {type: nosuchdriver}
  e: {type: configtest}
`
	c, err := config.ParseYAML([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	before := closes.Load()
	stores, err := c.Open()
	if err == nil || stores != nil {
		t.Fatalf("Open = %v, %v; want an error and no stores", stores, err)
	}
	for _, want := range []string{`"b"`, "b is down", `"c"`, `"typo"`, `"d"`, "nosuchdriver"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
	if got := closes.Load() - before; got != 2 {
		t.Errorf("closed %d stores after the failure, want the 2 opened (a, e)", got)
	}
}

func TestLoadByExtension(t *testing.T) {
	dir := t.TempDir()
	jp := filepath.Join(dir, "stores.json")
	yp := filepath.Join(dir, "stores.yaml")
	if err := os.WriteFile(jp, []byte(`{"stores": {"a": {"type": "configtest"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(yp, []byte("stores: {a: {type: configtest}}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{jp, yp} {
		stores, err := config.OpenFile(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if err := stores.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := config.Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}
