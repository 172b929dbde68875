package etcdtest

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"testing"
)

// EnableAuth turns on etcd's authentication, through the members' HTTP
// gateway: user gets the password and read-write access to every key (the
// role "readwrite"); a root user (which etcd requires) gets a random
// password, which only RootPassword tells. Clients without a user are
// refused from then on.
func (c *Cluster) EnableAuth(t testing.TB, user, password string) {
	t.Helper()
	defer c.Members[0].http.CloseIdleConnections()
	all := base64.StdEncoding.EncodeToString([]byte{0}) // key and range end \0: every key
	c.rootPassword = rand.Text()
	for _, step := range []struct {
		path string
		body any
	}{
		{"/v3/auth/role/add", map[string]any{"name": "root"}},
		{"/v3/auth/user/add", map[string]any{"name": "root", "password": c.rootPassword}},
		{"/v3/auth/user/grant", map[string]any{"user": "root", "role": "root"}},
		{"/v3/auth/role/add", map[string]any{"name": "readwrite"}},
		{"/v3/auth/role/grant", map[string]any{"name": "readwrite",
			"perm": map[string]any{"permType": "READWRITE", "key": all, "range_end": all}}},
		{"/v3/auth/user/add", map[string]any{"name": user, "password": password}},
		{"/v3/auth/user/grant", map[string]any{"user": user, "role": "readwrite"}},
		{"/v3/auth/enable", map[string]any{}},
	} {
		if err := c.post(step.path, step.body); err != nil {
			t.Fatalf("etcdtest: enable auth: %v", err)
		}
	}
}

// RootPassword is the password of the root user EnableAuth made, for a test
// that administers users as an operator would (etcdctl --user root).
func (c *Cluster) RootPassword() string { return c.rootPassword }

// post sends body as JSON to the first member's gateway; an answer other
// than 200 is an error, with what the member said.
func (c *Cluster) post(path string, body any) error {
	m := c.Members[0]
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	resp, err := m.http.Post(m.ClientURL+path, "application/json", bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("POST %s: %s: %s", path, resp.Status, out)
	}
	return nil
}
