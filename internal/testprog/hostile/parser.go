package hostile

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Parser modes: how the backend reads a body.
func init() {
	// first-wins: of two members of the same name, in the envelope or in
	// params, the first counts (as some JSON parsers do; encoding/json
	// takes the last).
	modes["first-wins"] = func(b *backend) {
		b.decode = func(body []byte) (request, error) {
			v, err := firstWins(json.NewDecoder(bytes.NewReader(body)), 0)
			if err != nil {
				return request{}, err
			}
			clean, err := json.Marshal(v)
			if err != nil {
				return request{}, err
			}
			var r request
			return r, json.Unmarshal(clean, &r)
		}
	}
}

// firstWins decodes the next JSON value keeping the first of duplicate
// members; depth is bounded.
func firstWins(dec *json.Decoder, depth int) (any, error) {
	if depth > 64 {
		return nil, errors.New("too deep")
	}
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t {
	case json.Delim('{'):
		m := map[string]any{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := firstWins(dec, depth+1)
			if err != nil {
				return nil, err
			}
			if _, seen := m[k.(string)]; !seen {
				m[k.(string)] = v
			}
		}
		_, err := dec.Token()
		return m, err
	case json.Delim('['):
		var a []any
		for dec.More() {
			v, err := firstWins(dec, depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token()
		return a, err
	}
	return t, nil
}
