package chaos

import (
	"fmt"
	"os"

	"github.com/leaderrun/leaderrun/internal/testkit/testenv"
)

// ChildPackage is the chaos child's package, relative to the module root.
const ChildPackage = "./internal/testkit/chaos/child"

// Env is what every trial needs: the two binaries and the storage emulator.
type Env struct {
	Leaderrun string // the leaderrun binary
	Child     string // the chaos child binary (ChildPackage)

	storage *testenv.Storage
}

// NewEnv checks its arguments: connectionString must name an emulator on a
// loopback address, with an account name and key (Azurite's, printed by
// scripts/azurite.sh start); the binaries must exist.
func NewEnv(connectionString, leaderrun, child string) (*Env, error) {
	s, err := testenv.ParseStorage(connectionString)
	if err != nil {
		return nil, fmt.Errorf("chaos: %w", err)
	}
	for _, bin := range []string{leaderrun, child} {
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("chaos: %w", err)
		}
	}
	return &Env{Leaderrun: leaderrun, Child: child, storage: s}, nil
}
