package workflow

// BigYAML is bigYAML for the external benchmarks.
var BigYAML = bigYAML
