// Package testprog holds, in one package per area, the programs that the
// testscripts (testdata/script, testdata/keyring) run with exec: fake
// servers, scripted browsers, probes and script commands. It is test
// support, not part of the agentauth binary: only the root main_test.go
// imports these packages, registering each one's Programs (and Cmds) with
// testscript. They are ordinary (non-test) files so that the repository
// root holds the command and not its test programs.
//
// Each package exposes Programs() map[string]func() and, when it has
// custom script commands, Cmds() map[string]func(*testscript.TestScript,
// bool, []string); progutil holds what they share (a loopback listener,
// serving until kill -INT, printing a raw HTTP answer). A test program may
// import any agentauth package; no agentauth package imports testprog.
package testprog
