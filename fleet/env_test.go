package fleet

import (
	"os"
	"strconv"
)

// envInt reads a test's size from the environment (documented beside
// each test that reads one), or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
