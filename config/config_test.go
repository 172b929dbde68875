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
		o.Int("retry.maxRetries", 0, 0, 100)
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

// TestParseErrors pins what a user reads for each kind of mistake in a
// config file: the store and the field, in the words of the file.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"stores: {a: {type: configtest, timeot: 1s}}",
			`config: store "a": unknown field "timeot" (known: type, timeout, options)`},
		{"cosid: {stores: {a: {type: configtest}}, extra: 1}", `config: "cosid": unknown field "extra" (known: stores)`},
		{"stores: {a: {type: configtest}}\nstore: {}", `config: the document: unknown field "store" (known: cosid, stores)`},
		{"stores: {a: {timeout: 1s}}", `config: store "a": type is missing (a driver name such as zookeeper)`},
		{"stores: {a: {type: [x]}}", `config: store "a": type a list is not a driver name (such as zookeeper)`},
		{"stores: {a: {type: configtest, timeout: soon}}", `config: store "a": timeout "soon": not a duration (e.g. 500ms, 3s)`},
		{"stores: {a: {type: configtest, timeout: -1s}}", `config: store "a": timeout "-1s": must be between 1ms and 24h`},
		{"stores: {a: {type: configtest, options: {x: [1, 2]}}}",
			`config: store "a": option "x": a list is not a string, number or boolean`},
		// An option value may be a secret: the error names the option only.
		{"stores: {a: {type: configtest, options: {auth: [digest:alice:hunter2]}}}",
			`config: store "a": option "auth": a list is not a string, number or boolean`},
		{"stores: {a: {type: configtest, options: 3}}", `config: store "a": options must be a mapping of option names, not "3"`},
		{"stores: {a: 1}", `config: store "a" must be a mapping with the fields type, timeout, options`},
		{"other: 1", `config: the document: unknown field "other" (known: cosid, stores)`},
		{"stores: {}", `config: no stores (expected cosid.stores or stores: a mapping of store names)`},
		{"", `config: the document must be a mapping with the fields cosid, stores`},
		{"stores: {a: {type: configtest}}\ncosid: {stores: {b: {type: configtest}}}",
			`config: both "cosid.stores" and "stores" are given; use one`},
		{"stores:\n\ta: {type: configtest}\n", "config: YAML: line 2: found character that cannot start any token"},
	} {
		if _, err := config.ParseYAML([]byte(tc.doc)); err == nil || err.Error() != tc.want {
			t.Errorf("%q:\ngot  %v\nwant %s", tc.doc, err, tc.want)
		}
	}
	for _, tc := range []struct{ doc, want string }{
		{`{"stores": {"a": {"type": "configtest", "timeot": "1s"}}}`,
			`config: store "a": unknown field "timeot" (known: type, timeout, options)`},
		{`{"stores": {"a": {"type": "configtest",}}}`,
			`config: JSON: invalid character '}' looking for beginning of object key string (at byte 39)`},
	} {
		if _, err := config.ParseJSON([]byte(tc.doc)); err == nil || err.Error() != tc.want {
			t.Errorf("%s:\ngot  %v\nwant %s", tc.doc, err, tc.want)
		}
	}
}

// TestBothFormats feeds the same documents to ParseJSON and ParseYAML (a
// JSON text is YAML too): the same rules, and the same message for each
// refusal.
func TestBothFormats(t *testing.T) {
	const sqlite = `{"type": "configtest", "options": {"connectString": "a.db"}}`
	for _, tc := range []struct{ doc, want string }{
		// A key given twice, at every level: the last one would win silently.
		{`{"stores": {"a": ` + sqlite + `, "a": {"type": "configtest"}}}`, `config: "stores.a" is given twice`},
		{`{"stores": {"a": {"type": "configtest", "options": {"connectString": "a.db", "connectString": "b.db"}}}}`,
			`config: "stores.a.options.connectString" is given twice`},
		{`{"stores": {"a": {"type": "configtest", "type": "other"}}}`, `config: "stores.a.type" is given twice`},
		{`{"stores": {"a": {"type": "configtest"}}, "stores": {"b": {"type": "configtest"}}}`, `config: "stores" is given twice`},
		{`{"cosid": {"stores": {"a": {"type": "configtest", "timeout": "1s", "timeout": "2s"}}}}`,
			`config: "cosid.stores.a.timeout" is given twice`},
		{`{"stores": {"a": {"type": "configtest", "options": {"retry": {"maxRetries": 1, "maxRetries": 2}}}}}`,
			`config: "stores.a.options.retry.maxRetries" is given twice`},
		// One option through nested and dotted spellings.
		{`{"stores": {"a": {"type": "configtest", "options": {"retry": {"maxRetries": 1}, "retry.maxRetries": 5}}}}`,
			`config: store "a": option "retry.maxRetries" is given twice (nested and dotted)`},
		// Values.
		{`{"stores": {"a": {"type": "configtest", "timeout": "soon"}}}`,
			`config: store "a": timeout "soon": not a duration (e.g. 500ms, 3s)`},
		{`{"stores": {"a": {"type": "configtest", "timeout": 99999999999999999}}}`,
			`config: store "a": timeout "99999999999999999": must be between 1ms and 24h`},
		{`{"stores": {"a": {"type": "configtest", "timeout": 0}}}`, `config: store "a": timeout "0": must be between 1ms and 24h`},
		{`{"stores": {"a": {"type": "configtest", "timeout": 1.5}}}`, `config: store "a": timeout "1.5": not a duration (e.g. 500ms, 3s)`},
		{`{"stores": {"a": {"type": "configtest", "options": {"x": [1]}}}}`,
			`config: store "a": option "x": a list is not a string, number or boolean`},
		{`{"stores": {"a": {"type": "configtest", "options": {"x": null}}}}`,
			`config: store "a": option "x" has no value`},
		{`{"stores": {"": {"type": "configtest"}}}`, `config: a store has an empty name`},
		{`{"stores": {}}`, `config: no stores (expected cosid.stores or stores: a mapping of store names)`},
		{`[]`, `config: the document must be a mapping with the fields cosid, stores`},
		{`null`, `config: the document must be a mapping with the fields cosid, stores`},
	} {
		for _, f := range []struct {
			name  string
			parse func([]byte) (*config.Config, error)
		}{{"JSON", config.ParseJSON}, {"YAML", config.ParseYAML}} {
			c, err := f.parse([]byte(tc.doc))
			if err == nil || err.Error() != tc.want || c != nil {
				t.Errorf("%s %s:\ngot  %v\nwant %s", f.name, tc.doc, err, tc.want)
			}
		}
	}
}

// TestOneDocument: nothing may follow the document, in either format.
func TestOneDocument(t *testing.T) {
	doc := `{"stores": {"a": {"type": "configtest"}}}`
	for _, tc := range []struct {
		parse     func([]byte) (*config.Config, error)
		doc, want string
	}{
		{config.ParseJSON, doc + ` {"stores": {}}`, `config: JSON: data after the document (which ends at byte 41)`},
		{config.ParseJSON, doc + ` x`, `config: JSON: data after the document (which ends at byte 41)`},
		{config.ParseJSON, doc + `}`, `config: JSON: data after the document (which ends at byte 41)`},
		{config.ParseJSON, `{"stores": {"a": {"type": "configtest"}}`, `config: JSON: the document ends early (at byte 40)`},
		{config.ParseYAML, doc + "\n---\nstores: {b: {type: configtest}}\n", `config: YAML: data after the document (a second document at line 2)`},
		{config.ParseYAML, "stores: {a: {type: configtest}}\n---\n", `config: YAML: data after the document (a second document at line 2)`},
	} {
		if c, err := tc.parse([]byte(tc.doc)); err == nil || err.Error() != tc.want || c != nil {
			t.Errorf("%q:\ngot  %v\nwant %s", tc.doc, err, tc.want)
		}
	}
	for _, ok := range []string{doc, doc + "\n", " \n" + doc + " \n\t"} {
		if _, err := config.ParseJSON([]byte(ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

// TestYAMLMerge: a merge key gives its keys, so one that is also written
// out is a duplicate (YAML would let the written one win silently).
func TestYAMLMerge(t *testing.T) {
	doc := `
base: &base {path: a.db}
stores:
  a: {type: configtest, options: {<<: *base, path: b.db}}
`
	// base is an unknown field, but the duplicate is found first.
	if _, err := config.ParseYAML([]byte(doc)); err == nil || err.Error() != `config: "stores.a.options.path" is given twice` {
		t.Errorf("a merged key written again: %v", err)
	}
	doc = `
stores:
  a: &a {type: configtest, options: {connectString: x}}
  b: {<<: *a, timeout: 2s}
`
	c, err := config.ParseYAML([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	// A document that merges itself is refused, not followed for ever.
	if _, err := config.ParseYAML([]byte("a: &a [x, *a]\nstores: {b: {<<: *a}}\n")); err == nil ||
		err.Error() != "config: YAML: anchor 'a' value contains itself" {
		t.Errorf("a self-merge: %v", err)
	}
	if c.Stores["b"].Options["connectString"] != "x" || c.Stores["b"].Timeout != 2*time.Second {
		t.Errorf("merged store b = %+v", c.Stores["b"])
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
	// One line, each store named once with its driver's own words.
	want := `config: 3 errors: store "b" (type configtest): b is down; ` +
		`store "c" (type configtest): unknown option "typo" (known: connectString, fail, flag, retry.maxRetries); ` +
		`store "d" (type nosuchdriver): unknown driver "nosuchdriver" (forgotten import? registered: ` +
		strings.Join(store.Drivers(), ", ") + `)`
	if err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
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
