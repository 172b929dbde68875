package main

import (
	"testing"

	"github.com/cosid-go/store/internal/etcdtest"
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
func etcdSpec(t *testing.T, extra map[string]string) storeSpec {
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
