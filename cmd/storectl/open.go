package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/config"
	"github.com/cosid-go/store/driver"
)

// newFlagSet returns a flag set whose errors come back to run, which
// prints them once with the exit code they deserve.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseArgs parses flags anywhere among the arguments (`seal orders
// --create` works like `seal --create orders`) and returns the others.
// Everything after "--" is an argument, for keys that start with '-'. A
// negative number is an argument too (`init k -5`), never an unknown flag.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		n := negativeAt(fs, args)
		if n == 0 {
			pos, args = append(pos, args[0]), args[1:]
			continue
		}
		head, tail := args, []string(nil)
		if n > 0 {
			head, tail = args[:n], args[n:]
		}
		if err := fs.Parse(head); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%v", err)
		}
		rest := fs.Args()
		if len(rest) == 0 && tail == nil {
			return pos, nil
		}
		if m := len(head) - len(rest); m > 0 && head[m-1] == "--" {
			return append(pos, rest...), nil // negativeAt stops at "--": no tail
		}
		if len(rest) > 0 {
			pos, rest = append(pos, rest[0]), rest[1:]
		}
		args = slices.Concat(rest, tail)
	}
}

// negativeAt is the index of the first argument before any "--" that is a
// negative integer and not the value of the flag before it, or -1.
func negativeAt(fs *flag.FlagSet, args []string) int {
	for i, a := range args {
		if a == "--" {
			return -1
		}
		if _, err := strconv.ParseInt(a, 10, 64); (err == nil || errors.Is(err, strconv.ErrRange)) &&
			a[0] == '-' && (i == 0 || !takesValue(fs, args[i-1])) {
			return i
		}
	}
	return -1
}

// takesValue reports whether arg is a flag that takes the next argument
// as its value (--timeout 5s), as opposed to --yes or --timeout=5s.
func takesValue(fs *flag.FlagSet, arg string) bool {
	name := strings.TrimLeft(arg, "-")
	if name == arg || strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}

// openWithFlags parses the flags of a command that takes no arguments
// besides flags: the store flags and the command's own (own adds them),
// then opens the existing store. It returns the store and its description.
func openWithFlags(name string, args []string, own func(fs *flag.FlagSet)) (*store.Store, string, error) {
	fs := newFlagSet(name)
	var sf storeFlags
	sf.register(fs)
	own(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, "", err
	}
	if len(pos) > 0 {
		return nil, "", usagef("unexpected argument %q", pos[0])
	}
	return sf.open(openExisting)
}

// How a command opens a store: only an existing one (create=false), or
// creating it when missing (init, migrate's target).
const (
	openExisting = false
	openOrCreate = true
)

// optionFlags collects repeated -o KEY=VALUE flags.
type optionFlags map[string]string

func (o optionFlags) String() string { return "" }

func (o optionFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("option %q is not KEY=VALUE", s)
	}
	if _, dup := o[k]; dup {
		return fmt.Errorf("option %q is given twice", k)
	}
	o[k] = v
	return nil
}

// durationFlag remembers whether it was set, so that --timeout overrides a
// config file's timeout only when given.
type durationFlag struct {
	d   time.Duration
	set bool
}

func (d *durationFlag) String() string { return d.d.String() }

func (d *durationFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return fmt.Errorf("%q is not a positive duration such as 5s", s)
	}
	d.d, d.set = v, true
	return nil
}

// storeFlags select the one store a command works on.
type storeFlags struct {
	driver  string
	options optionFlags
	config  string
	store   string
	timeout durationFlag
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	f.options = optionFlags{}
	fs.StringVar(&f.driver, "driver", "", "registered driver `NAME`")
	fs.Var(f.options, "o", "driver option `KEY=VALUE` (repeatable)")
	fs.Var(f.options, "option", "driver option `KEY=VALUE` (repeatable)")
	fs.StringVar(&f.config, "config", "", "config `FILE` of named stores")
	fs.StringVar(&f.store, "store", "", "store `NAME` in the config file")
	fs.Var(&f.timeout, "timeout", "bound of opening and of each store operation")
}

const storeFlagsUsage = `Store flags:
  --driver NAME [-o KEY=VALUE]...  a registered driver and its options
  --config FILE [--store NAME]     a named store of a config file
  --timeout DURATION               bound of the opening and of each store operation (default 3s)
`

// open opens the store the flags select and describes it for messages.
// Without create, only an existing store opens.
func (f *storeFlags) open(create bool) (*store.Store, string, error) {
	switch {
	case f.driver != "" && f.config != "":
		return nil, "", usagef("give either --driver or --config, not both")
	case f.config == "" && f.store != "":
		return nil, "", usagef("--store needs --config")
	case f.config != "" && len(f.options) > 0:
		return nil, "", usagef("-o applies to --driver; a --config store takes its options from the file")
	case f.driver != "":
		sc := config.StoreConfig{Type: f.driver, Options: f.options}
		return openStore(sc, f.timeout, "", create)
	case f.config == "":
		return nil, "", usagef("no store given: use --driver NAME [-o KEY=VALUE]... or --config FILE [--store NAME]")
	}
	cfg, err := loadConfig(f.config)
	if err != nil {
		return nil, "", err
	}
	name := f.store
	if name == "" {
		if len(cfg.Stores) != 1 {
			return nil, "", usagef("%s has %d stores; choose one with --store (%s)",
				f.config, len(cfg.Stores), strings.Join(storeNames(cfg), ", "))
		}
		name = storeNames(cfg)[0]
	}
	sc, ok := cfg.Stores[name]
	if !ok {
		return nil, "", usagef("no store %q in %s (stores: %s)", name, f.config, strings.Join(storeNames(cfg), ", "))
	}
	return openStore(sc, f.timeout, name, create)
}

func loadConfig(path string) (*config.Config, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, usagef("%v", err)
	}
	return cfg, nil
}

func storeNames(cfg *config.Config) []string {
	return slices.Sorted(maps.Keys(cfg.Stores))
}

// openStore opens sc, named name in a config file (or ""), and describes it. A refused option or unknown driver is bad usage; any
// other failure (an unreachable server) is a failure. The timeout (the
// flag's, else the config's) bounds the opening too; without one the
// driver's own options do. Without create, the driver option create=false
// makes the driver open only an existing store (driver.OptionCreate).
func openStore(sc config.StoreConfig, timeout durationFlag, name string, create bool) (*store.Store, string, error) {
	desc, keysOnly := describe(name, sc, true), describe(name, sc, false)
	if !create {
		if v, ok := sc.Options[driver.OptionCreate]; ok && v != "false" {
			return nil, "", usagef("option %s=%s: this command never creates a store (only init and migrate's target do)",
				driver.OptionCreate, v)
		}
		sc.Options = maps.Clone(sc.Options)
		if sc.Options == nil {
			sc.Options = map[string]string{}
		}
		sc.Options[driver.OptionCreate] = "false"
	}
	var opts []store.Option
	ctx := context.Background()
	bound := time.Duration(0)
	switch {
	case timeout.set:
		bound = timeout.d
	case sc.Timeout > 0:
		bound = sc.Timeout
	}
	if bound > 0 {
		opts = append(opts, store.WithTimeout(bound))
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	st, err := store.OpenContext(ctx, sc.Type, sc.Options, opts...)
	if errors.Is(err, store.ErrInvalidArgument) {
		// An option the driver refused may be a secret under a mistyped
		// key (pasword=...), which redact does not know: no values.
		desc = keysOnly
	}
	if err != nil {
		return nil, "", fmt.Errorf("cannot open %s: %w", desc, err)
	}
	return st, desc, nil
}

// describe names a store for messages: its config name if any, its driver
// and its options, sorted, each through redact (passwords in URLs
// and in password= pairs, values of secret-looking options, are hidden),
// or without values.
func describe(name string, sc config.StoreConfig, values bool) string {
	var b strings.Builder
	if name != "" {
		fmt.Fprintf(&b, "%q (%s", name, sc.Type)
	} else {
		b.WriteString(sc.Type)
	}
	for _, k := range slices.Sorted(maps.Keys(sc.Options)) {
		if !values {
			b.WriteString(" " + k)
			continue
		}
		b.WriteString(" " + driver.Redact(k+"="+sc.Options[k]))
	}
	if name != "" {
		b.WriteString(")")
	}
	return b.String()
}

// parseSpec reads a migrate store spec: NAME (a store of cfg), or
// DRIVER:KEY=VALUE,KEY=VALUE. A config name wins over the DRIVER: form, so
// a store may be called anything. It returns the store and its config
// name ("" for the DRIVER: form).
func parseSpec(flagName, spec string, cfg *config.Config, cfgPath string) (config.StoreConfig, string, error) {
	if spec == "" {
		return config.StoreConfig{}, "", usagef("%s is required", flagName)
	}
	if cfg != nil {
		if sc, ok := cfg.Stores[spec]; ok {
			return sc, spec, nil
		}
	}
	drv, rest, ok := strings.Cut(spec, ":")
	if !ok || !driverName.MatchString(drv) {
		if cfg != nil {
			return config.StoreConfig{}, "", usagef("%s %q: no such store in %s (stores: %s), and not DRIVER:OPTIONS",
				flagName, driver.Redact(spec), cfgPath, strings.Join(storeNames(cfg), ", "))
		}
		return config.StoreConfig{}, "", usagef("%s %q: want DRIVER:KEY=VALUE,... (e.g. memory:name=a), or a store NAME with --config",
			flagName, driver.Redact(spec))
	}
	opts, err := parseOptionList(rest)
	if err != nil {
		// Options that do not parse are echoed by no value: one may be a
		// secret under a key redact does not know.
		return config.StoreConfig{}, "", usagef("%s %q: %v", flagName, drv+":...", err)
	}
	return config.StoreConfig{Type: drv, Options: opts}, "", nil
}

// driverName is what a registered driver may be called, as far as a spec
// goes: "connString=postgres" (a spec without its driver, cut at the URL's
// colon) is no driver name, and the rest of it no option list to echo.
var driverName = regexp.MustCompile(`^[A-Za-z0-9_.\-]+$`)

// parseOptionList reads KEY=VALUE,KEY=VALUE. A piece without '=' belongs
// to the value before it: connect strings are comma lists themselves. Its
// errors quote no piece: a piece may be part of a secret.
func parseOptionList(s string) (map[string]string, error) {
	opts := map[string]string{}
	if s == "" {
		return opts, nil
	}
	last := ""
	for _, piece := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(piece, "=")
		if !ok {
			if last == "" {
				return nil, errors.New("the first option has no '=': want KEY=VALUE pairs separated by commas")
			}
			opts[last] += "," + piece
			continue
		}
		if k == "" {
			return nil, errors.New("an option has an empty name (a piece starts with '=')")
		}
		if _, dup := opts[k]; dup {
			return nil, fmt.Errorf("option %q is given twice", k)
		}
		opts[k] = v
		last = k
	}
	return opts, nil
}
