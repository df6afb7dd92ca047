package queue

import "testing"

// TestJobsPerQueue: River hands a worker half as many jobs again as its
// queue has slots (rounded up), for the jobs being recorded; a queue of
// 0 runs one node at a time.
func TestJobsPerQueue(t *testing.T) {
	for n, want := range map[int]int{0: 2, 1: 2, 2: 3, 3: 5, 10: 15, 16: 24} {
		if got := jobsPerQueue(n); got != want {
			t.Errorf("jobsPerQueue(%d) = %d, want %d", n, got, want)
		}
	}
}
