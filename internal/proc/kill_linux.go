package proc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// KillGroup kills the process group pgid, left running by a Skein that
// died, before the step that started it runs again. startedAt is when that
// step started: the group is killed only if one of its living processes
// started no earlier than startedAt minus a second, so a group id the
// kernel has since given to unrelated processes is never killed. Skein's
// own group is never killed either.
//
// killed reports whether the group was signalled. Once it was, KillGroup
// waits up to two seconds for its processes to be gone and returns
// ErrGroupSurvived if some are still alive. Processes are read from /proc:
// a process's group and start time from /proc/<pid>/stat, the boot time
// from /proc/stat.
func KillGroup(pgid int, startedAt time.Time) (killed bool, err error) {
	if pgid <= 1 {
		return false, fmt.Errorf("killing process group %d: not a process group", pgid)
	}
	if pgid == syscall.Getpgrp() {
		return false, nil
	}
	boot, err := bootTime()
	if err != nil {
		return false, fmt.Errorf("killing process group %d: %w", pgid, err)
	}
	hz := clockTicks()
	members, err := groupMembers(pgid)
	if err != nil {
		return false, fmt.Errorf("killing process group %d: %w", pgid, err)
	}
	notBefore := startedAt.Add(-startSlack)
	ours := false
	for _, m := range members {
		if !m.startTime(boot, hz).Before(notBefore) {
			ours = true
			break
		}
	}
	if !ours {
		return false, nil
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		if errors.Is(err, syscall.ESRCH) { // it ended on its own meanwhile
			return false, nil
		}
		return false, fmt.Errorf("killing process group %d: %w", pgid, err)
	}
	deadline := time.Now().Add(killWait)
	for {
		members, err := groupMembers(pgid)
		switch {
		case err != nil:
			return true, fmt.Errorf("waiting for process group %d: %w", pgid, err)
		case len(members) == 0:
			return true, nil
		case time.Now().After(deadline):
			return true, fmt.Errorf("process group %d: %w", pgid, ErrGroupSurvived)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stat is what KillGroup reads from /proc/<pid>/stat.
type stat struct {
	state      byte   // R, S, D, Z, …
	ppid       int    // parent
	pgrp       int    // process group
	startTicks uint64 // start, in clock ticks since boot
}

// startTime is when the process started, to within a second (the boot
// time's precision).
func (s stat) startTime(boot time.Time, hz uint64) time.Time {
	sec := s.startTicks / hz
	frac := s.startTicks % hz
	return boot.Add(time.Duration(sec)*time.Second + time.Duration(frac)*time.Second/time.Duration(hz))
}

// parseStat reads the fields of /proc/<pid>/stat that KillGroup needs. The
// second field, the command name in parentheses, may itself hold spaces and
// parentheses, so the fields are counted from the last ')'.
func parseStat(b []byte) (stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, errors.New("no command name")
	}
	// state(3) ppid(4) pgrp(5) … starttime(22), counted from 1 at pid.
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return stat{}, errors.New("too few fields")
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return stat{}, fmt.Errorf("ppid: %w", err)
	}
	pgrp, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return stat{}, fmt.Errorf("pgrp: %w", err)
	}
	start, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return stat{}, fmt.Errorf("starttime: %w", err)
	}
	return stat{state: f[0][0], ppid: ppid, pgrp: pgrp, startTicks: start}, nil
}

// groupMembers returns the living processes of group pgid (zombies are
// dead: they only wait to be reaped).
func groupMembers(pgid int) ([]stat, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []stat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
				continue // it exited while we looked
			}
			return nil, err
		}
		s, err := parseStat(b)
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		if s.pgrp == pgid && s.state != 'Z' && s.state != 'X' {
			out = append(out, s)
		}
	}
	return out, nil
}

// bootTime is the btime line of /proc/stat: when the system booted, to the
// second.
var bootTime = sync.OnceValues(func() (time.Time, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("btime ")); ok {
			sec, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("/proc/stat btime: %w", err)
			}
			return time.Unix(sec, 0), nil
		}
	}
	if err := sc.Err(); err != nil {
		return time.Time{}, err
	}
	return time.Time{}, errors.New("/proc/stat has no btime")
})

// clockTicks is the unit of starttime in /proc/<pid>/stat:
// sysconf(_SC_CLK_TCK), which the kernel passes to every process as
// AT_CLKTCK in its auxiliary vector. It is 100 on every Linux Skein runs
// on; that is the answer when the vector cannot be read.
var clockTicks = sync.OnceValue(func() uint64 {
	const atClkTck = 17
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 100
	}
	word := int(unsafe.Sizeof(uintptr(0)))
	read := func(p []byte) uint64 {
		if word == 4 {
			return uint64(binary.NativeEndian.Uint32(p))
		}
		return binary.NativeEndian.Uint64(p)
	}
	for i := 0; i+2*word <= len(b); i += 2 * word {
		if read(b[i:]) == atClkTck {
			if v := read(b[i+word:]); v > 0 {
				return v
			}
		}
	}
	return 100
})
