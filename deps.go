//go:build deps

package main

import (
	_ "github.com/cli/oauth"
	_ "github.com/coder/websocket"
	_ "github.com/fatih/color"
	_ "github.com/go-jose/go-jose/v4"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/mattn/go-isatty"
	_ "github.com/rogpeppe/go-internal/testscript"
	_ "github.com/urfave/cli/v2"
	_ "github.com/zalando/go-keyring"
	_ "golang.org/x/oauth2"
)

func main() {}
