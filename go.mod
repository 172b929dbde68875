module github.com/cosid-go/store

go 1.26

require (
	github.com/go-zookeeper/zk v1.0.4
	github.com/google/go-cmp v0.7.0
	github.com/hashicorp/go-multierror v1.1.1
	go.uber.org/goleak v1.3.0
	go.yaml.in/yaml/v3 v3.0.6
)

require github.com/hashicorp/errwrap v1.0.0 // indirect
