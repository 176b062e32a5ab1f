module example.com/zk-paced

go 1.26

require github.com/go-zookeeper/zk v1.0.4
