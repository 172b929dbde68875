// Command storectl is the operations tool of cosid stores: it inspects a
// store, seals and initialises range keys, migrates keys and slot histories
// from one store to another, and purges a store. It works with any
// registered driver through the portable API. Run `storectl help` for the
// usage text, which also lists the exit codes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	// Every driver, etcd's module included: the tool must open whatever a
	// program using the store may have created.
	_ "github.com/cosid-go/store/drivers/etcd"
	_ "github.com/cosid-go/store/drivers/memory"
	_ "github.com/cosid-go/store/drivers/mysql"
	_ "github.com/cosid-go/store/drivers/postgres"
	_ "github.com/cosid-go/store/drivers/sqlite"
	_ "github.com/cosid-go/store/drivers/zookeeper"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1 // the operation failed
	exitUsage   = 2 // bad flags, unknown command, bad option or value
	exitRefused = 3 // refused for safety
	// A signal (SIGINT, SIGTERM) stopped the command between two steps;
	// it says what it did and what to run next.
	exitInterrupted = 4
)

const usageText = `storectl: operations on a cosid store (github.com/cosid-go/store)

Usage:
  storectl COMMAND [flags] [arguments]
  storectl help [COMMAND]

Commands:
  inspect [--json]                list range keys, namespaces with their used slots, and locks
  acl [--json]                    list every node of a ZooKeeper store with its ACL
  seal [--create] KEY...          seal range keys; prints each key's final next value
  init KEY VALUE                  create range key KEY at next value VALUE
  advance KEY VALUE               raise range key KEY to next value VALUE (never lowers)
  restore --raise N --no-moves [BACKUP PATH]  make a store restored from a backup safe: raise every key and slot by N
  migrate --from SPEC --to SPEC   move range keys and slot histories to another store
  import-leaf --leaf DSN --leaf-stopped  start range keys at the max_id of Leaf's leaf_alloc rows
  purge --yes                     delete everything the store keeps (every instance stopped)
  backup FILE DEST                copy a SQLite store's file consistently while it is in use
  version                         the versions of storectl and of the store modules it was built with

Choosing the store (every command but migrate):
  --driver NAME [-o KEY=VALUE]... a registered driver and its options; -o repeats
  --config FILE [--store NAME]    a named store of a config file: YAML, or JSON when FILE
                                  ends in .json, in the shape package config loads;
                                  --store may be left out when FILE has one store
  --timeout DURATION              bound of opening the store and of each store
                                  operation (default 3s, or the store's timeout in
                                  FILE; without either, opening waits as the
                                  driver's options say)

Store specs (migrate --from and --to):
  NAME                            a store of --config FILE
  DRIVER:KEY=VALUE,KEY=VALUE      a driver and its options; a piece without '=' continues
                                  the value before it, so a connect string needs no quoting:
                                  zookeeper:connectString=zk1:2181,zk2:2181,root=/cosid
                                  etcd:endpoints=etcd1:2379,etcd2:2379,prefix=/cosid
  DRIVER:                         a driver with default options

Registered drivers: %s
(The memory driver keeps its state inside one process: storectl finds no store with
it. It is there for tests.)

Only init and migrate's target create a store that does not exist. Every other
command opens an existing store only (the driver option create=false): a mistyped
path, root or schema fails with "no store at ..." and creates nothing.
Nothing that can carry a secret is printed: passwords in URLs and in password=
pairs, values of options such as auth or password show as ***.

Exit codes:
  0  done
  1  the operation failed: unreachable server, unknown key, a target that conflicts, ...
  2  bad usage: unknown command or flag, bad option or value, unreadable config file
  3  refused for safety: a live lease, a held lock, or purge without --yes
  4  interrupted (SIGINT, SIGTERM): the step in hand was finished; the output says
     what was done and what to run next

Run 'storectl help COMMAND' for a command's flags and details.
`

// command is one subcommand. run gets the arguments after the command
// name; it returns an error built with usagef or refusedf to choose the
// exit code, or any other error for exit code 1.
type command struct {
	name  string
	usage string
	run   func(ctx context.Context, e *env, args []string) error
}

// env is what a command writes to, and its clock (the local one: lease
// times are judged against it).
type env struct {
	stdout, stderr io.Writer
	now            func() time.Time
	args           []string // the command line, for advice to run it again
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

func main() {
	ctx, stop := interruptible(os.Stderr)
	code := runContext(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs storectl with args (without the program name) and returns the
// exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

// runContext is run stopped by ctx: a command that writes finishes the
// step in hand, says what it did and what to run next, and exits with
// exitInterrupted; every command can be run again.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr, now: time.Now, args: args}
	if len(args) == 0 {
		fmt.Fprint(stderr, mainUsage())
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		return help(e, rest)
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "storectl: unknown command %q (commands: %s)\nRun 'storectl help' for usage.\n",
			driver.Redact(name), strings.Join(commandNames(), ", "))
		return exitUsage
	}
	err := c.run(ctx, e, rest)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, c.usage)
		return exitOK
	}
	if err == nil {
		return exitOK
	}
	code := exitCode(err)
	if sig, ok := interrupted(ctx); ok && code != exitInterrupted && errors.Is(err, context.Canceled) {
		// A command that only reads, stopped.
		code = exitInterrupted
		err = fmt.Errorf("%s: stopped: %w", sig, err)
	}
	// Errors quote options and driver messages: hide their secrets.
	fmt.Fprintf(stderr, "storectl %s: %s\n", name, driver.Redact(err.Error()))
	if code == exitUsage {
		fmt.Fprintf(stderr, "Run 'storectl help %s' for usage.\n", name)
	}
	return code
}

func help(e *env, args []string) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(e.stdout, mainUsage())
		return exitOK
	case len(args) == 1 && commands[args[0]] != nil:
		fmt.Fprint(e.stdout, commands[args[0]].usage)
		return exitOK
	}
	fmt.Fprintf(e.stderr, "storectl help: unknown command %q (commands: %s)\n",
		driver.Redact(strings.Join(args, " ")), strings.Join(commandNames(), ", "))
	return exitUsage
}

func mainUsage() string {
	return fmt.Sprintf(usageText, strings.Join(store.Drivers(), ", "))
}

func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// exitError carries the exit code of an error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usagef reports bad usage (exit code 2).
func usagef(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// refusedf reports a refusal for safety (exit code 3).
func refusedf(format string, args ...any) error {
	return &exitError{code: exitRefused, err: fmt.Errorf(format, args...)}
}

func exitCode(err error) int {
	if xe, ok := errors.AsType[*exitError](err); ok {
		return xe.code
	}
	// The portable layer checks every key, name and value: what it rejects
	// came from the command line.
	if errors.Is(err, store.ErrInvalidArgument) {
		return exitUsage
	}
	return exitFailed
}
