package main

import (
	"encoding/binary"
	"os"
)

// walState is what the -shm file's header says of the write-ahead log
// (https://www.sqlite.org/walformat.html): mxFrame, the frames in the
// log, and nBackfill, how many of them a checkpoint has copied into the
// database. Both are in the machine's byte order; this reads them as
// little-endian, which is every machine this script runs on.
type walState struct {
	ok                 bool
	mxFrame, nBackfill uint32
}

// checkpointedSince reports whether a checkpoint ran between before and
// s: it copied frames, or the log started over (a writer restarts it only
// after a checkpoint copied all of it).
func (s walState) checkpointedSince(before walState) bool {
	if !s.ok || !before.ok {
		return false
	}
	return s.nBackfill != before.nBackfill || s.mxFrame < before.mxFrame
}

type shm struct{ f *os.File }

// shmReader opens path for reading; a missing file reads as unknown.
func shmReader(path string) *shm {
	f, err := os.Open(path)
	if err != nil {
		return &shm{}
	}
	return &shm{f: f}
}

func (m *shm) read() walState {
	if m.f == nil {
		return walState{}
	}
	var b [136]byte
	if _, err := m.f.ReadAt(b[:], 0); err != nil {
		return walState{}
	}
	// The first copy of the WAL-index header at 0 (mxFrame at 16), the
	// checkpoint information after both copies, at 96 (nBackfill first).
	return walState{ok: true, mxFrame: binary.LittleEndian.Uint32(b[16:]), nBackfill: binary.LittleEndian.Uint32(b[96:])}
}

func (m *shm) close() {
	if m.f != nil {
		_ = m.f.Close()
	}
}
