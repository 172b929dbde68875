package store

// Waiting returns the calls of st waiting for the next write of key.
func Waiting(st *Store, key string) int {
	st.batches.mu.Lock()
	defer st.batches.mu.Unlock()
	if b := st.batches.keys[key]; b != nil {
		return b.live
	}
	return 0
}
