package tck

import (
	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// checkLayout: the optional LayoutKeeper records a namespace's first
// layout, creating the namespace, and gives it to every later call, from
// any store, whatever layout that call brings; a namespace of other
// settings and a sealed one refuse as Acquire does. Layout reads it, also
// once sealed; a purge forgets it.
func checkLayout(e *env) {
	a, b := e.open(), e.open()
	needDriver[driver.LayoutKeeper](e, a)
	const rule = " (see driver.LayoutKeeper: the first layout is recorded and never replaced)"
	ns := e.namespace("layout", 2)
	keep := func(st *store.Store, ns store.Namespace, layout, want string) {
		e.t.Helper()
		got, err := st.Slots().KeepLayout(e.ctx, ns, layout)
		e.fatalIf(err, "KeepLayout(%q, %q)", ns.Name, layout)
		if got != want {
			e.t.Errorf("KeepLayout(%q, %q) = %q, want %q%s", ns.Name, layout, got, want, rule)
		}
	}
	keep(a, ns, "unit=1ms epoch=2024", "unit=1ms epoch=2024")
	nss, err := b.Slots().Namespaces(e.ctx)
	e.fatalIf(err, "Namespaces")
	if len(nss) != 1 || nss[0].Name != ns.Name {
		e.t.Errorf("Namespaces after KeepLayout of a missing namespace: %+v, want %q (KeepLayout creates it)", nss, ns.Name)
	}
	keep(b, ns, "unit=10ms epoch=2024", "unit=1ms epoch=2024")
	keep(a, ns, "unit=1ms epoch=2024", "unit=1ms epoch=2024")
	read := func(st *store.Store, name, want string) {
		e.t.Helper()
		got, err := st.Slots().Layout(e.ctx, name)
		e.fatalIf(err, "Layout(%q)", name)
		if got != want {
			e.t.Errorf("Layout(%q) = %q, want %q (see driver.LayoutKeeper.Layout)", name, got, want)
		}
	}
	read(b, ns.Name, "unit=1ms epoch=2024")
	read(b, "layout-missing", "")
	// A namespace used before layouts were kept has none, and takes the
	// first one a generator brings.
	old := e.namespace("layout-old", 2)
	e.releaseUsed(a, e.acquire(a, old, "worker", e.long())) // the purge below needs it ended
	read(b, old.Name, "")
	keep(b, old, "unit=2ms epoch=2024", "unit=2ms epoch=2024")
	keep(a, old, "unit=1ms epoch=2024", "unit=2ms epoch=2024")
	// The layout is the namespace's alone, and leaves its slots alone.
	l := e.acquire(b, ns, "worker", e.long())
	e.wantSearched(l, ns.Limit, []int{0, 1}, "a namespace with a layout")
	keep(a, e.namespace("layout-2", 2), "unit=10ms epoch=2024", "unit=10ms epoch=2024")
	infos, err := a.Slots().List(e.ctx, ns.Name)
	e.fatalIf(err, "Slots")
	if len(infos) != 1 {
		e.t.Errorf("Slots of a namespace with a layout and one term lists %+v, want the one slot", infos)
	}

	other := ns
	other.Limit = 3
	_, err = a.Slots().KeepLayout(e.ctx, other, "unit=1ms epoch=2024")
	e.wantIs(err, store.ErrConfigMismatch, "KeepLayout with another limit")

	// A purge forgets the layout with its namespace. (Before the seal
	// below: a purge refuses a store that holds a seal, and a next floor
	// ahead, so the term is released with its last used timestamp.)
	if has[driver.Purger](a) {
		e.releaseUsed(b, l)
		_, err = a.Purge(e.ctx)
		e.fatalIf(err, "Purge")
		read(b, ns.Name, "")
		keep(b, ns, "unit=10ms epoch=2024", "unit=10ms epoch=2024")
	}

	e.fatalIf(a.Slots().Seal(e.ctx, "layout-sealed"), "Seal")
	_, err = a.Slots().KeepLayout(e.ctx, e.namespace("layout-sealed", 2), "unit=1ms epoch=2024")
	e.wantIs(err, store.ErrSealed, "KeepLayout in a sealed namespace")
	have, err := a.Slots().Layout(e.ctx, ns.Name)
	e.fatalIf(err, "Layout")
	e.fatalIf(a.Slots().Seal(e.ctx, ns.Name), "Seal")
	read(b, ns.Name, have) // a migration reads it after the seal
}
