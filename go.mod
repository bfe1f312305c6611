module github.com/retryhttp/retryhttp

go 1.25.0

require (
	github.com/hashicorp/go-cleanhttp v0.5.2
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	golang.org/x/sync v0.19.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
