package main

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cosid-go/store/internal/testing/etcdtest"
)

// Every command test also runs on a real etcd member (one the binary's
// tests share, a key prefix of its own per store), and forEachPair
// migrates between etcd and every other backend in both directions.
func init() {
	backends = append(backends, backend{name: "etcd", fresh: func(t *testing.T) storeSpec {
		return etcdSpec(t, nil)
	}})
}

// etcdSpec is a fresh store on the shared member, under a prefix no other
// store of the tests uses; extra options are added (or replace).
func etcdSpec(t testing.TB, extra map[string]string) storeSpec {
	o := map[string]string{
		"endpoints": etcdtest.Shared(t).Endpoints()[0],
		"prefix":    randomRoot(t),
		// Generous: a loaded machine; no test here is about the dial.
		"dialTimeout": "20s",
	}
	for k, v := range extra {
		o[k] = v
	}
	return storeSpec{driver: "etcd", options: o}
}

// etcdKeys counts the keys under prefix on endpoint, read with etcd's own
// client: what a store wrote, whatever it would say of it.
func etcdKeys(t *testing.T, endpoint, prefix string) int64 {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 20 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// etcdWithAuth starts a member of the test's own with etcd's auth on, user
// having password, and returns its endpoint.
func etcdWithAuth(t *testing.T, user, password string) string {
	t.Helper()
	c := etcdtest.Start(t, 1)
	c.EnableAuth(t, user, password)
	return c.Endpoints()[0]
}
