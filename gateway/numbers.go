package gateway

import (
	"math"
	"strconv"
	"strings"
)

// jsonschema-go decodes the arguments it validates into float64, so a
// number the backend reads exactly (Python, a big-decimal parser) may not
// be the number serve checked: 10.0000000000000000001 is checked as 10
// and passes maximum: 10, 1e-400 is checked as 0. inexactNumber refuses
// such numbers where the schema compares numbers (toolSchema.numeric):
// a literal of at most 15 significant digits (DBL_DIG) in float64's
// normal range keeps its order against any other such number, and so
// does one that is the shortest decimal of its float64 (the literal is
// exactly what a float64 reader and an exact reader both take it for);
// any other is refused, never rounded.

// inexactNumber finds in the JSON value raw (valid, as decoded already) a
// number literal float64 does not hold faithfully, as above.
func inexactNumber(raw []byte) (string, bool) {
	inString, escaped := false, false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(raw) && strings.IndexByte("0123456789.eE+-", raw[j]) >= 0 {
				j++
			}
			if lit := string(raw[i:j]); !faithful(lit) {
				return lit, true
			}
			i = j - 1
		}
	}
	return "", false
}

// faithful reports whether the number literal lit (RFC 8259 §6) is, in
// float64, a number no other literal of the kind above can be confused
// with.
func faithful(lit string) bool {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return false // out of range: ±Inf
	}
	digits, exp, ok := decimal(lit)
	switch {
	case !ok:
		return false
	case digits == "":
		return true // a zero
	case f == 0:
		return false // underflow
	case len(digits) <= 15 && math.Abs(f) >= 0x1p-1022:
		return true
	}
	d, e, _ := decimal(strconv.FormatFloat(f, 'e', -1, 64))
	return d == digits && e == exp
}

// decimal writes a number literal as digits × 10^exp, the digits without
// leading or trailing zeros ("" for zero) and the sign dropped.
func decimal(lit string) (digits string, exp int, ok bool) {
	lit = strings.TrimPrefix(lit, "-")
	mant, e, hasExp := strings.Cut(strings.ToLower(lit), "e")
	if hasExp {
		n, err := strconv.Atoi(e)
		if err != nil {
			return "", 0, false
		}
		exp = n
	}
	whole, frac, _ := strings.Cut(mant, ".")
	exp -= len(frac)
	digits = strings.TrimLeft(whole+frac, "0")
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	return trimmed, exp, true
}

// shorten cuts a literal for an error message to n bytes and an ellipsis.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
