//go:build linux

package rofs

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// readOnly makes dir read-only: a mode a process without root privileges
// must obey, else a read-only bind mount of dir onto itself, else the
// immutable attribute (chattr +i), which stop root too.
func readOnly(t testing.TB, dir string) (string, error) {
	if os.Geteuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			return "", err
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o700) }) // so t.TempDir can remove it
		return "chmod 0555 (not root)", nil
	}
	mountErr := unix.Mount(dir, dir, "", unix.MS_BIND, "")
	if mountErr == nil {
		if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
			return "", errors.Join(fmt.Errorf("remount read-only: %w", err), unix.Unmount(dir, 0))
		}
		t.Cleanup(func() {
			if err := unix.Unmount(dir, 0); err != nil {
				t.Errorf("unmount the read-only bind mount %s: %v", dir, err)
			}
		})
		return "a read-only bind mount", nil
	}
	if err := setImmutable(dir, true); err != nil {
		return "", fmt.Errorf("bind mount: %v; chattr +i: %v", mountErr, err)
	}
	t.Cleanup(func() {
		if err := setImmutable(dir, false); err != nil {
			t.Errorf("chattr -i %s: %v", dir, err)
		}
	})
	return "chattr +i (root)", nil
}

func setImmutable(dir string, on bool) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // opened for an ioctl only
	flags, err := unix.IoctlGetUint32(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return err
	}
	if on {
		flags |= fsImmutableFL
	} else {
		flags &^= fsImmutableFL
	}
	return unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, int(flags))
}

func isReadOnlyFS(err error) bool { return errors.Is(err, syscall.EROFS) }

// fsImmutableFL is FS_IMMUTABLE_FL of linux/fs.h (chattr's 'i').
const fsImmutableFL = 0x00000010
