package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/config"
)

// moves are the keys and namespaces that moved out of a store (migrate)
// after its backup was taken, as the stores they moved to show them. The
// backup holds them unsealed: raised, they would be handed out here again
// beside the store they moved to, so restore seals them instead.
type moves struct {
	keys       map[string]string // key -> the store it moved to
	namespaces map[string]string
	ids        map[string]string // identity -> the store named
}

// readMoves lists the keys and namespaces of each store named with
// --moved-to. The backup cannot tell which of them came from it, so every
// one of them that the restored store has is taken for moved: a name
// sealed here in excess refuses its callers (ErrSealed), a moved one left
// open hands out values twice.
func readMoves(ctx context.Context, specs []string, cfgPath string, timeout durationFlag) (*moves, error) {
	mv := &moves{keys: map[string]string{}, namespaces: map[string]string{}, ids: map[string]string{}}
	var cfg *config.Config
	if cfgPath != "" && len(specs) > 0 {
		var err error
		if cfg, err = loadConfig(cfgPath); err != nil {
			return nil, err
		}
	}
	for _, spec := range specs {
		sc, name, err := parseSpec("--moved-to", spec, cfg, cfgPath)
		if err != nil {
			return nil, err
		}
		st, desc, err := openStore(sc, timeout, name, openExisting)
		if err != nil {
			return nil, fmt.Errorf("--moved-to %s: %w (nothing changed)", spec, err)
		}
		if id, err := st.ID(ctx); err == nil {
			mv.ids[id] = desc
		}
		keys, err := st.Ranges().Keys(ctx)
		if err != nil && !errors.Is(err, store.ErrUnsupported) {
			st.Close()
			return nil, fmt.Errorf("--moved-to %s: listing keys: %w (nothing changed)", desc, err)
		}
		for _, k := range keys {
			mv.keys[k] = desc
		}
		nss, err := st.Slots().Namespaces(ctx)
		st.Close()
		if err != nil && !errors.Is(err, store.ErrUnsupported) {
			return nil, fmt.Errorf("--moved-to %s: listing namespaces: %w (nothing changed)", desc, err)
		}
		for _, ns := range nss {
			mv.namespaces[ns.Name] = desc
		}
	}
	return mv, nil
}

// check refuses a --moved-to store that is the restored store itself (or
// another copy of it): every key of it would be sealed.
func (mv *moves) check(ctx context.Context, st *store.Store, desc string) error {
	id, err := st.ID(ctx)
	if err != nil {
		return nil // no identity to compare (a driver without one)
	}
	if other, ok := mv.ids[id]; ok {
		return refusedf("--moved-to %s is %s itself or a copy of it (identity %s), not a store keys moved to; nothing changed",
			other, desc, id)
	}
	return nil
}

// seal seals in st the moved keys and namespaces the restore left
// unraised. It runs after the backup mark is cleared (a marked store
// refuses seals); the SQLite file form does it on the copy, before the
// copy takes its name.
func (mv *moves) seal(ctx context.Context, e *env, st *store.Store, keys, namespaces []string) error {
	for _, k := range keys {
		at, err := st.Ranges().Seal(ctx, k)
		if err != nil {
			return fmt.Errorf("key %s: sealing it (it moved to %s): %w; run restore again with the same --moved-to", k, mv.keys[k], err)
		}
		fmt.Fprintf(e.stdout, "key %s: sealed at %d (it moved to %s after the backup)\n", k, at, mv.keys[k])
	}
	for _, ns := range namespaces {
		if err := st.Slots().Seal(ctx, ns); err != nil {
			return fmt.Errorf("namespace %s: sealing it (it moved to %s): %w; run restore again with the same --moved-to",
				ns, mv.namespaces[ns], err)
		}
		fmt.Fprintf(e.stdout, "namespace %s: sealed (it moved to %s after the backup)\n", ns, mv.namespaces[ns])
	}
	return nil
}
