package wire

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
)

// The standard request headers of MCP 2026-07-28 ("Transports"): Mcp-Method
// and Mcp-Name repeat the body's method and name, and Mcp-Param-NAME the
// arguments whose schema names a header, so that gateways can route
// without parsing JSON.

// maxToolPages bounds the tools/list pages paramHeaders reads.
const maxToolPages = 10

// paramHeaders are the Mcp-Param-NAME headers of a tools/call: each
// argument whose input schema property names a header (x-mcp-header), as
// found by tools/list, with its value (a string as is, a number or boolean
// as its JSON text).
func (s *HTTPSession) paramHeaders(ctx context.Context, params any) (http.Header, error) {
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	var call struct {
		Name      string                     `json:"name"`
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	if err := json.Unmarshal(b, &call); err != nil {
		return nil, err
	}
	var schema json.RawMessage
	cursor := ""
	for page := 0; page < maxToolPages && schema == nil; page++ {
		var p any
		if cursor != "" {
			p = map[string]string{"cursor": cursor}
		}
		var list struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := s.call(ctx, "tools/list", p, &list, nil); err != nil {
			return nil, err
		}
		for _, t := range list.Tools {
			if t.Name == call.Name {
				schema = t.InputSchema
			}
		}
		if cursor = list.NextCursor; cursor == "" {
			break
		}
	}
	var props struct {
		Properties map[string]struct {
			Header string `json:"x-mcp-header"`
		} `json:"properties"`
	}
	if schema == nil || json.Unmarshal(schema, &props) != nil {
		return nil, nil
	}
	headers := map[string]string{}
	for name, prop := range props.Properties {
		if prop.Header != "" {
			headers[name] = prop.Header
		}
	}
	h := http.Header{}
	SetParamHeaders(h, call.Arguments, headers)
	return h, nil
}

// SetParamHeaders sets the Mcp-Param-NAME header of each argument of a
// tools/call that headers (argument name to the x-mcp-header of its
// schema property) names: a string as is (or encoded, see HeaderValue), a
// number or boolean as its JSON text; other values get none (MCP
// 2026-07-28 "Transports", Custom Headers from Tool Parameters).
func SetParamHeaders(h http.Header, arguments map[string]json.RawMessage, headers map[string]string) {
	for name, header := range headers {
		raw, ok := arguments[name]
		if !ok {
			continue
		}
		var v any
		if json.Unmarshal(raw, &v) != nil {
			continue
		}
		switch v := v.(type) {
		case string:
			h.Set("Mcp-Param-"+header, HeaderValue(v))
		case float64, bool:
			h.Set("Mcp-Param-"+header, string(bytes.TrimSpace(raw)))
		}
	}
}

// SetStandardHeaders repeats a request's method in Mcp-Method and, for
// tools/call and prompts/get its params.name, for resources/read its
// params.uri, in Mcp-Name (MCP 2026-07-28 "Transports", Standard Headers).
func SetStandardHeaders(h http.Header, m *Message) {
	h.Set(headerMethod, m.Method)
	var p struct {
		Name *string `json:"name"`
		URI  *string `json:"uri"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return
	}
	switch {
	case (m.Method == "tools/call" || m.Method == "prompts/get") && p.Name != nil:
		h.Set(headerName, HeaderValue(*p.Name))
	case m.Method == "resources/read" && p.URI != nil:
		h.Set(headerName, HeaderValue(*p.URI))
	}
}

// HeaderValue is v as a header value: literal when it is printable ASCII
// without surrounding spaces, else "=?base64?…?=" (MCP 2026-07-28
// "Transports", Value Encoding).
func HeaderValue(v string) string {
	plain := v == strings.TrimSpace(v)
	for i := 0; plain && i < len(v); i++ {
		plain = v[i] >= 0x20 && v[i] <= 0x7e
	}
	if plain && !strings.HasPrefix(v, "=?base64?") {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}
