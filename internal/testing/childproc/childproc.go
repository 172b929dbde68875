// Package childproc runs the test binary again as a child process of the
// running test: a lock holder to kill or pause, an upgrader to kill
// midway. The child runs the same test, which finds its environment
// variable set and plays the child's part.
//
// It is a test helper: import it from _test.go files only.
package childproc

import (
	"bufio"
	"os"
	"os/exec"
	"testing"
)

// Start runs this test binary again for the running test, with the
// environment variable env set to value, and returns it with its output;
// it is killed when the test ends.
func Start(t *testing.T, env, value string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$")
	cmd.Env = append(os.Environ(), env+"="+value)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewReader(out)
}
