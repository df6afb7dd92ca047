package proc

import (
	"errors"
	"time"
)

// How long KillGroup waits for a killed group to be gone.
const killWait = 2 * time.Second

// startSlack is how much earlier than the recorded start a process of the
// group may have started and still be taken for one of its own: the
// kernel's boot time is known to the second only.
const startSlack = time.Second

// ErrGroupSurvived is the reason KillGroup gives when the group still had
// living processes when it stopped waiting for them.
var ErrGroupSurvived = errors.New("process group still has living processes after SIGKILL")
