package wal

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
)

// Who may read and change a log directory. Its files hold every live
// message and dead letter, payloads included, so they are the owner's
// alone (Options.GroupReadable lets the group read them). The files this
// package creates get their mode exactly (createFile, mkdirAll), and
// temporary files are created afresh, never through a link (createTemp).
// tidwall/wal creates segment files itself, with the mode it is given but
// following links and subject to the umask; what makes that safe is that
// nobody else can put anything in the directory: Open refuses a
// directory that group or others may write, or that another user owns
// (checkDir), and it sets the modes of what it finds (fixModes), so a
// umask that narrowed a mode, or an older version's wider modes, do not
// last past an Open.

// checkDir refuses dir unless it is a directory owned by this process's
// user that neither group nor others may write, then gives it mode p.dir.
// dir itself may be a symbolic link to such a directory (a data directory
// on another disk): the link's own directory is the operator's to guard.
func checkDir(dir string, p perms) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory: %w", dir, ErrUnsafeDir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s is owned by uid %d, not by this process's user (uid %d): anyone who owns it can plant files and links the log would follow; run as its owner or chown it (chown %d %s): %w",
			dir, st.Uid, os.Geteuid(), os.Geteuid(), dir, ErrUnsafeDir)
	}
	if m := fi.Mode().Perm(); m&0o022 != 0 {
		return fmt.Errorf("%s has mode %04o: group or others may write it, and so plant files and links the log would follow; fix with chmod %o %s, or name a new subdirectory, which Open creates %04o: %w",
			dir, m, p.dir, dir, p.dir, ErrUnsafeDir)
	}
	if fi.Mode().Perm() != p.dir {
		return os.Chmod(dir, p.dir)
	}
	return nil
}

// fixModes gives every regular file directly in dir mode p.file (a file
// another user owns cannot be changed: that is logged, not fatal, since
// checkDir already keeps others out of the directory). Links and
// directories are left alone; Chmod would follow a link.
func fixModes(dir string, p perms, log *slog.Logger) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, de := range ents {
		if !de.Type().IsRegular() {
			continue
		}
		fi, err := de.Info()
		if err != nil || fi.Mode().Perm() == p.file {
			continue // gone since the listing, or as wanted
		}
		path := filepath.Join(dir, de.Name())
		if err := os.Chmod(path, p.file); err != nil {
			log.Warn("ringwal/wal: cannot set a file's mode", "path", path, "mode", fmt.Sprintf("%04o", p.file), "err", err)
		}
	}
	return nil
}
