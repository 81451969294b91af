package contracts

// The limits of failure descriptors and the path rendering, for the tests of contracts_test.
const (
	MaxFailureDepth        = maxFailureDepth
	MaxFailureMessage      = maxFailureMessage
	MaxFailureString       = maxFailureString
	MaxFailureIssues       = maxFailureIssues
	MaxFailureResults      = maxFailureResults
	MaxFailureKeys         = maxFailureKeys
	MaxFailureBytes        = maxFailureBytes
	FailureTruncatedNote   = failureTruncatedNote
	FailureResultFulfilled = failureResultFulfilled
	FailureResultRejected  = failureResultRejected
)

var PathString = pathString

// Limit is limit, for the tests of the descriptor limits.
func (f Failure) Limit() Failure { return f.limit() }

// Failure is failure, for the tests of the descriptors.
func (e *Error) Failure() Failure { return e.failure() }
