package cli

import (
	"bufio"
	"io"
	"text/tabwriter"
)

// table lays out rows in columns (text/tabwriter) over a buffer: a
// tabwriter writes each cell and each run of padding with a call of its
// own, which on a terminal or a pipe is a system call each, 420,000 of
// them for the steps of a 10,000-item foreach. Flush writes the table.
type table struct {
	*tabwriter.Writer
	out *bufio.Writer
}

func newTable(w io.Writer) table {
	out := bufio.NewWriterSize(w, 64<<10)
	return table{tabwriter.NewWriter(out, 0, 4, 2, ' ', 0), out}
}

// Flush writes what the table holds.
func (t table) Flush() error {
	if err := t.Writer.Flush(); err != nil {
		return err
	}
	return t.out.Flush()
}
