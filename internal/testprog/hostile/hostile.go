// Package hostile holds hostile-backend, an MCP server over Streamable
// HTTP that misbehaves on purpose, for the gateway_hostile_*.txtar scripts:
// what a backend serve fronts may do with what serve forwards. Each mode
// group lives in a file of its own and registers its modes in init; the
// modes named by -mode (comma-separated) apply in order.
//
// Every tools/call the backend runs is appended to -ran-log as one line,
// "ran TOOL ARGS" (the arguments as received, compact), so a script can
// check what reached it.
//
// It is test support (see internal/testprog); only main_test.go imports it.
package hostile

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

// programs and cmds are filled by the init functions of this package's files.
var (
	programs = map[string]func(){"hostile-backend": hostileMain}
	cmds     = map[string]func(ts *testscript.TestScript, neg bool, args []string){}
)

// Programs are the programs testscript puts on PATH for exec, by name.
func Programs() map[string]func() { return programs }

// Cmds are the custom script commands, by name.
func Cmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) { return cmds }

// modes are the ways the backend misbehaves, by name: each changes the
// backend before it serves.
var modes = map[string]func(b *backend){}

// tool is one tool the backend lists and runs.
type tool struct {
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"inputSchema"`
	// run answers a call (nil: the text "ran NAME").
	run func(b *backend, args json.RawMessage) string `json:"-"`
}

// request is what the backend reads of a JSON-RPC request.
type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Cursor    string          `json:"cursor"`
	} `json:"params"`
}

// backend is the server and the hooks modes replace.
type backend struct {
	tools    []tool
	pageSize int // tools per tools/list page; 0: all in one
	// decode reads a request body (default: encoding/json, whose member
	// matching ignores case and whose last duplicate wins).
	decode func(body []byte) (request, error)
	// name is the tool a call runs (default: params.name).
	name func(r *http.Request, req request) string
	// lookup finds a tool by name (default: exact).
	lookup func(name string) (tool, bool)
	// mux serves paths besides /mcp that modes add.
	mux *http.ServeMux

	mu  sync.Mutex
	ran *os.File
}

func baseTools() []tool {
	obj := json.RawMessage(`{"type":"object"}`)
	return []tool{
		{Name: "admin_delete", InputSchema: obj},
		{Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		// route's region is repeated in Mcp-Param-Region by MCP
		// 2026-07-28 clients (x-mcp-header).
		{Name: "route", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)},
	}
}

func hostileMain() {
	fs := flag.NewFlagSet("hostile-backend", flag.ExitOnError)
	addrFile := fs.String("addr-file", "", "write the listening address to `FILE`")
	mode := fs.String("mode", "", "comma-separated `MODES`")
	ranLog := fs.String("ran-log", "", "append a line per tool run to `FILE`")
	fs.Parse(os.Args[1:])
	b := &backend{tools: baseTools(), mux: http.NewServeMux()}
	b.decode = func(body []byte) (request, error) {
		var r request
		return r, json.Unmarshal(body, &r)
	}
	b.name = func(_ *http.Request, req request) string { return req.Params.Name }
	b.lookup = func(name string) (tool, bool) {
		for _, t := range b.tools {
			if t.Name == name {
				return t, true
			}
		}
		return tool{}, false
	}
	for _, m := range strings.Split(*mode, ",") {
		if m == "" {
			continue
		}
		apply, ok := modes[m]
		if !ok {
			fmt.Fprintf(os.Stderr, "hostile-backend: unknown mode %q\n", m)
			os.Exit(2)
		}
		apply(b)
	}
	if *ranLog != "" {
		f, err := os.OpenFile(*ranLog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			fmt.Fprintln(os.Stderr, "hostile-backend:", err)
			os.Exit(1)
		}
		b.ran = f
	}
	b.mux.HandleFunc("/mcp", b.serveMCP)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile-backend:", err)
		os.Exit(1)
	}
	// Written whole, then renamed: a reader never sees half an address.
	err = os.WriteFile(*addrFile+".tmp", []byte(ln.Addr().String()+"\n"), 0o600)
	if err == nil {
		err = os.Rename(*addrFile+".tmp", *addrFile)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostile-backend:", err)
		os.Exit(1)
	}
	http.Serve(ln, b.mux)
}

func (b *backend) serveMCP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	req, err := b.decode(body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if len(req.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var result any
	switch req.Method {
	case "initialize":
		var p struct {
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &p)
		w.Header().Set("Mcp-Session-Id", "hostile-session")
		result = map[string]any{"protocolVersion": p.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]string{"name": "hostile-backend", "version": "1.0.0"}}
	case "tools/list":
		result = b.list(req.Params.Cursor)
	case "tools/call":
		name := b.name(r, req)
		t, ok := b.lookup(name)
		if !ok {
			answer(w, req.ID, nil, map[string]any{"code": -32602, "message": "unknown tool: " + name})
			return
		}
		b.mu.Lock()
		if b.ran != nil {
			var args bytes.Buffer
			if json.Compact(&args, req.Params.Arguments) != nil || args.Len() > 200 {
				args.Reset()
				args.WriteString(strconv.Itoa(len(req.Params.Arguments)) + " bytes")
			}
			fmt.Fprintf(b.ran, "ran %s %s%s\n", t.Name, args.String(), mcpHeaders(r.Header))
		}
		b.mu.Unlock()
		text := "ran " + t.Name
		if t.run != nil {
			text = t.run(b, req.Params.Arguments)
		}
		result = map[string]any{"content": []map[string]string{{"type": "text", "text": text}}}
	case "ping":
		result = map[string]any{}
	default:
		answer(w, req.ID, nil, map[string]any{"code": -32601, "message": "method not found: " + req.Method})
		return
	}
	answer(w, req.ID, result, nil)
}

// mcpHeaders are the request's Mcp-Method, Mcp-Name and Mcp-Param-*
// headers, sorted, as " [Name: value; …]", or "".
func mcpHeaders(h http.Header) string {
	var hs []string
	for k, vs := range h {
		if k == "Mcp-Method" || k == "Mcp-Name" || strings.HasPrefix(k, "Mcp-Param-") {
			for _, v := range vs {
				hs = append(hs, k+": "+v)
			}
		}
	}
	if len(hs) == 0 {
		return ""
	}
	sort.Strings(hs)
	return " [" + strings.Join(hs, "; ") + "]"
}

// list is one page of tools/list from cursor (an index).
func (b *backend) list(cursor string) map[string]any {
	from, _ := strconv.Atoi(cursor)
	from = min(max(from, 0), len(b.tools))
	to := len(b.tools)
	if b.pageSize > 0 {
		to = min(from+b.pageSize, to)
	}
	r := map[string]any{"tools": b.tools[from:to]}
	if to < len(b.tools) {
		r["nextCursor"] = strconv.Itoa(to)
	}
	return r
}

func answer(w http.ResponseWriter, id json.RawMessage, result, rerr any) {
	m := map[string]any{"jsonrpc": "2.0", "id": id}
	if rerr != nil {
		m["error"] = rerr
	} else {
		m["result"] = result
	}
	b, _ := json.Marshal(m)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}
