package deps

import (
	_ "github.com/cenkalti/backoff/v4"
	_ "github.com/go-kit/log"
	_ "github.com/go-kit/log/level"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
	_ "go.uber.org/goleak"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	_ "k8s.io/apimachinery/pkg/apis/meta/v1"
	_ "k8s.io/client-go/dynamic/dynamicinformer"
	_ "k8s.io/client-go/tools/record"
	_ "k8s.io/client-go/tools/leaderelection"
	_ "k8s.io/client-go/util/workqueue"
)
