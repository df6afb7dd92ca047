package queue

import "testing"

// TestJobsPerQueue: River hands a worker twice as many jobs as its queue
// has slots, for the jobs being recorded; a queue of 0 runs one node at a
// time.
func TestJobsPerQueue(t *testing.T) {
	for n, want := range map[int]int{0: 2, 1: 2, 2: 4, 3: 6, 10: 20, 16: 32} {
		if got := jobsPerQueue(n); got != want {
			t.Errorf("jobsPerQueue(%d) = %d, want %d", n, got, want)
		}
	}
}
