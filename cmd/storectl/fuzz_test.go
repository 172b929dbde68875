package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cosid-go/store"
)

var fuzzRuns atomic.Int64

// FuzzArgs runs storectl with argument lists (NUL-separated in the input)
// against a memory store holding two keys. Bad usage or a refusal changes
// nothing stored, and bad usage's message names one of the arguments or
// says which argument is missing, extra or empty. The store flags come last, so the
// store is always the memory one.
func FuzzArgs(f *testing.F) {
	for _, s := range []string{
		"init\x00k\x00-5", "init\x00k\x0012x", "init\x00orders\x0050", "init\x00new\x007", "init\x00-5\x00k",
		"seal\x00a//b", "seal\x00--create\x00fresh", "seal\x00\u202eab", "seal\x00 ", "init\x00\ufeffk\x001",
		"init\x00k\x0099999999999999999999", "inspect\x00extra", "inspect\x00--bogus", "purge\x00now",
		"init\x00k\x001\x00--timeout\x00-5", "seal\x00--\x00-k", "init\x00" + strings.Repeat("k", 2000) + "\x001",
		"inspect\x00-o\x00x", "seal\x00orders\x00--config\x00x.yaml",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		argv := strings.Split(in, "\x00")
		switch argv[0] {
		case "init", "seal", "inspect", "purge":
		default:
			return // the commands that take a store and arguments
		}
		name := fmt.Sprintf("storectl/fuzz#%d", fuzzRuns.Add(1))
		spec := storeSpec{driver: "memory", options: map[string]string{"name": name}}
		st := spec.open(t)
		r := st.Ranges()
		if _, err := r.Next(t.Context(), "orders", 100); err != nil {
			t.Fatal(err)
		}
		if err := r.Init(t.Context(), "users", 7); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, st)
		res := ctl(with(argv, spec.flags())...)
		if res.code != exitUsage && res.code != exitRefused {
			return
		}
		if after := snapshot(t, st); after != before {
			t.Fatalf("%q: exit %d, yet the store changed:\n%s\nto\n%s", argv, res.code, before, after)
		}
		if res.code == exitUsage && !namesAnArgument(res.stderr, argv[1:]) {
			t.Fatalf("%q: exit %d with a message naming none of the arguments:\n%s", argv, res.code, res.stderr)
		}
	})
}

// snapshot is every range key with its next value and sealed flag.
func snapshot(t *testing.T, st *store.Store) string {
	t.Helper()
	var b strings.Builder
	for _, k := range keysOf(t, st) {
		next, sealed, err := st.Ranges().Current(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%q=%d sealed=%v\n", k, next, sealed)
	}
	return b.String()
}

// namesAnArgument: the message quotes or shows one of the arguments (a
// flag without its dashes, a long one by its first bytes), or says which
// argument is missing, extra or empty.
func namesAnArgument(msg string, argv []string) bool {
	for _, s := range []string{"want KEY VALUE", "no KEY given", "no store given"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	if slices.Contains(argv, "") && strings.Contains(msg, " is empty") {
		return true // an empty argument, named by what it stood for
	}
	return slices.ContainsFunc(argv, func(a string) bool {
		q := strconv.Quote(a)
		if len(a) > 64 {
			q = q[:10] // shortened: its first bytes
		}
		flagName, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		return a != "" && strings.Contains(msg, a) || strings.Contains(msg, q) ||
			strings.HasPrefix(a, "-") && flagName != "" && strings.Contains(msg, "-"+flagName)
	})
}
