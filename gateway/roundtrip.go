package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/agentauth/agentauth/wire"
)

// The gateway's own requests to a backend, over any conn.

// roundTrip sends the gateway's own request and returns its result,
// skipping anything else the backend sends meanwhile.
func (m *Mount) roundTrip(ctx context.Context, cn conn, method string, params any, out http.Header) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	req, err := wire.NewRequest(nextInternalID(), method, params)
	if err != nil {
		return nil, err
	}
	raw, _ := json.Marshal(req)
	rep, err := cn.post(ctx, req, raw, out)
	if err != nil {
		return nil, err
	}
	defer rep.close()
	for {
		f, err := rep.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, backendErr(m.b.Name, "did not answer %s", method)
			}
			return nil, err
		}
		var resp wire.Message
		if json.Unmarshal(f.data, &resp) != nil || !resp.IsResponse() || resp.ID.String() != req.ID.String() {
			continue
		}
		if resp.Error != nil {
			return nil, backendErr(m.b.Name, "refused %s: %s", method, resp.Error.Message)
		}
		return resp.Result, nil
	}
}
