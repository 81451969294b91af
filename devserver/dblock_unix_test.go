//go:build unix

package devserver

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// Two servers on one database file: the second is refused at once with ErrDBInUse, naming the
// holder; once the first has exited, the database is free again.
func TestSecondServerOnOneDatabaseIsRefused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state", "temporal.db")
	first := startServer(t, Options{UIPort: -1, DBFile: db})

	_, err := Start(t.Context(), Options{BinaryPath: temporalBinary(t), UIPort: -1, DBFile: db})
	require.ErrorIs(t, err, ErrDBInUse)
	require.Equal(t, "kortyx: the dev server database "+db+" is in use by another dev server, started by process "+strconv.Itoa(os.Getpid())+
		": stop that one (one server per database), or give this one another Options.DBFile, or \"\" for an in-memory database: dev server database in use", err.Error())
	var inUse *DBInUseError
	require.ErrorAs(t, err, &inUse)
	require.Equal(t, DBInUseError{DB: db, PID: os.Getpid()}, *inUse)
	select {
	case <-first.Done():
		t.Fatal("the refused start stopped the first server")
	default:
	}

	require.NoError(t, first.Stop())
	release, err := lockDB(db) // free as soon as Stop returns
	require.NoError(t, err)
	release()
}

// A start that fails releases the lock at once.
func TestFailedStartReleasesTheDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "temporal.db")
	_, err := Start(t.Context(), Options{BinaryPath: filepath.Join(t.TempDir(), "no-such-temporal"), UIPort: -1, DBFile: db})
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrDBInUse)
	release, err := lockDB(db)
	require.NoError(t, err)
	release()
}
