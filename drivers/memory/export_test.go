package memory

// SetClock replaces the clock of s's state, so tests can move time at will
// (backwards too, as a ZooKeeper leader change can).
func SetClock(s *driverStore, now func() int64) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.clock = now
}

// NewDriver opens a raw driver store, for the tests of package memory_test
// that call the driver's methods or set its clock.
var NewDriver = newDriver
