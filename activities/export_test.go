package activities

// The metric names, for the tests of activities_test.
const (
	MetricOperationDuration = metricOperationDuration
	MetricTokenUsage        = metricTokenUsage
	MetricToolCalls         = metricToolCalls
	MetricToolErrors        = metricToolErrors
)
