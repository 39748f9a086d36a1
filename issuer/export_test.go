package issuer

// The bounds, for the external tests.
const (
	MaxPendingConsents      = maxPendingConsents
	MaxDeviceAuthorizations = maxDeviceAuthorizations
	MaxRegistrationBytes    = maxRegistrationBytes
	UnusedClientTTL         = unusedClientTTL
	MaxStateBytes           = maxStateBytes
	MaxScopeBytes           = maxScopeBytes
	MaxURIBytes             = maxURIBytes
	MaxParamBytes           = maxParamBytes
	UserCodeFreeFailures    = userCodeFreeFailures
	UserCodeRetryInterval   = userCodeRetryInterval
	UserCodeMaxFailures     = userCodeMaxFailures
	UserCodeLockout         = userCodeLockout
)
