package live

import (
	"image/color"

	"charm.land/lipgloss/v2"
)

// styles colour the marks and the quieter parts of a line; without
// colour every style renders text as it is.
type styles struct {
	green, red, yellow, cyan, dim style
}

// style is a Lip Gloss style, or none: plain output renders a line per
// step, and a no-op Lip Gloss style still measured and copied every
// string (7% of a 10,000-item foreach piped to a file).
type style struct {
	s  lipgloss.Style
	on bool
}

// Render styles text, or returns it as it is.
func (s style) Render(text string) string {
	if !s.on {
		return text
	}
	return s.s.Render(text)
}

func newStyles(colored bool) styles {
	if !colored {
		return styles{}
	}
	c := func(col color.Color) style { return style{lipgloss.NewStyle().Foreground(col), true} }
	return styles{
		green: c(lipgloss.Green), red: c(lipgloss.Red), yellow: c(lipgloss.Yellow), cyan: c(lipgloss.Cyan),
		dim: style{lipgloss.NewStyle().Faint(true), true},
	}
}
