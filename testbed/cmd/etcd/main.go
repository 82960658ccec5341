// Command etcd is the upstream etcd server (go.etcd.io/etcd/server/v3/etcdmain),
// built at the version that k8s.io/kubernetes pins, for the wlmap testbed only.
// It accepts the same flags as the released etcd binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
