//go:build tools

// Package tools pins the Kubernetes binaries that build.sh compiles, so that
// `go mod tidy` keeps them (and all their dependencies) in go.mod and go.sum.
// This file is never compiled: it only carries blank imports.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
