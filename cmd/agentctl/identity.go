package main

import "github.com/mcpledger/mcpledger/confirm"

// Who a person is, as agentctl records it: the OS account this process
// runs as, found by its uid, never by an environment variable (USER,
// LOGNAME), which anyone can set to any name. Approvals, denials and
// reconciliations given with agentctl, the terminal prompt's answers and
// the requester of a call all carry it, so a policy's "distinctApprover"
// compares two accounts the operating system vouches for.

// osAccount names the OS account of this process: its login name, else
// "uid:N" for a uid without an entry in the user database.
func osAccount() string { return confirm.Account() }

// who names the person running agentctl, for approvals, denials,
// reconciliations and the requester of a call.
func (a *app) who() string { return osAccount() }
