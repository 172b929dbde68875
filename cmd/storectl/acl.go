package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/drivers/zookeeper"
)

func init() {
	register(&command{name: "acl", run: runACL, usage: `Usage: storectl acl [--json] STORE FLAGS

Lists the access control of every node the store keeps: for ZooKeeper, the
root and each node below it, with its ACL as the acl option writes it
(scheme:id:perms, perms among the letters crwda). The store never changes the
ACL of a node it did not create; this shows what it found and what it made.
ZooKeeper shows a digest's hash only to a session with the admin permission on
the node (to others it reads "user:x"). A node whose ACL or children the
store's session may not read is listed with the error, and what is below it is
not. Only drivers with ACLs support it (zookeeper).

  --json   print a JSON list instead: [{"path", "acl": [{"scheme", "id",
           "perms"}], "error"}]

` + storeFlagsUsage})
}

// aclLister is the ZooKeeper driver's ACL listing.
type aclLister interface {
	ACLs(ctx context.Context) ([]zookeeper.NodeACL, error)
}

type aclJSON struct {
	Path  string         `json:"path"`
	ACL   []aclEntryJSON `json:"acl"`
	Error string         `json:"error,omitempty"`
}

type aclEntryJSON struct {
	Scheme string `json:"scheme"`
	ID     string `json:"id"`
	Perms  string `json:"perms"`
}

func runACL(ctx context.Context, e *env, args []string) error {
	var asJSON bool
	st, desc, err := openWithFlags("acl", args, func(fs *flag.FlagSet) { fs.BoolVar(&asJSON, "json", false, "print JSON") })
	if err != nil {
		return err
	}
	defer st.Close()
	// One bound for the whole walk, one node at a time: generous.
	ctx, cancel := context.WithTimeout(ctx, max(10*st.Timeout(), time.Minute))
	defer cancel()
	var nodes []zookeeper.NodeACL
	has, err := rawAs(st, func(l aclLister) (err error) {
		nodes, err = l.ACLs(ctx)
		return err
	})
	if !has {
		return usagef("%s has no ACLs to show (only the zookeeper driver has)", desc)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", desc, err)
	}
	if asJSON {
		out := make([]aclJSON, 0, len(nodes))
		for _, n := range nodes {
			j := aclJSON{Path: n.Path, ACL: []aclEntryJSON{}}
			for _, a := range n.ACL {
				j.ACL = append(j.ACL, aclEntryJSON{Scheme: a.Scheme, ID: a.ID, Perms: zookeeper.PermString(a.Perms)})
			}
			if n.Err != nil {
				j.Error = driver.Redact(n.Err.Error())
			}
			out = append(out, j)
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	if len(nodes) == 0 {
		fmt.Fprintln(e.stdout, "no nodes")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	for _, n := range nodes {
		line := zookeeper.FormatACL(n.ACL)
		if n.Err != nil {
			line += "\t(" + driver.Redact(n.Err.Error()) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\n", n.Path, line)
	}
	return tw.Flush()
}
