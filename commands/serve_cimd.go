package commands

import (
	"os"

	"github.com/urfave/cli/v2"

	"github.com/agentauth/agentauth/issuer"
)

// cimdFlags copies --cimd, --cimd-host and --cimd-document into opts.CIMD:
// the mode, the hosts documents are fetched from, and the pinned documents
// read from their files (checked by issuer.New).
func cimdFlags(c *cli.Context, opts *ServeOptions) error {
	opts.CIMD = issuer.CIMDOptions{Mode: c.String("cimd"), Hosts: c.StringSlice("cimd-host")}
	switch opts.CIMD.Mode {
	case issuer.CIMDFetch, issuer.CIMDPinned, issuer.CIMDOff:
	default:
		return usageErrorf("--cimd must be %s, %s or %s, not %q", issuer.CIMDFetch, issuer.CIMDPinned, issuer.CIMDOff, opts.CIMD.Mode)
	}
	if opts.CIMD.Mode != issuer.CIMDFetch && len(opts.CIMD.Hosts) > 0 {
		return usageErrorf("--cimd-host names the hosts documents are fetched from, and --cimd %s fetches none", opts.CIMD.Mode)
	}
	for _, path := range c.StringSlice("cimd-document") {
		data, err := os.ReadFile(path)
		if err != nil {
			return usageErrorf("--cimd-document: cannot read %s: %v", path, err)
		}
		docs, err := issuer.ParseCIMDDocuments(data)
		if err != nil {
			return usageErrorf("--cimd-document: cannot use %s: %v", path, err)
		}
		opts.CIMD.Pinned = append(opts.CIMD.Pinned, docs...)
	}
	if opts.CIMD.Mode == issuer.CIMDPinned && len(opts.CIMD.Pinned) == 0 {
		return usageErrorf("--cimd pinned uses only the documents of --cimd-document FILE, and none is given")
	}
	if opts.CIMD.Mode == issuer.CIMDOff && len(opts.CIMD.Pinned) > 0 {
		return usageErrorf("--cimd-document pins a document, and --cimd off uses none")
	}
	return nil
}
