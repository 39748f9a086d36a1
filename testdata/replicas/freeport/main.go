// Command freeport prints a loopback TCP port that was free a moment ago:
// HAProxy, unlike serve, cannot listen on port 0 and say which port it got.
package main

import (
	"fmt"
	"net"
	"os"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "freeport:", err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
}
