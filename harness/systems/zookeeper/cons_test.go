package zookeeper

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaoslab/chaoslab/harness/lab"
)

func TestParseCons(t *testing.T) {
	out := ` /127.0.0.1:48378[1](queued=3,recved=1205,sent=1202,sid=0x1000a3f5e2b0001,lop=GETD,est=1700000000000,to=30000,lcxid=0x4b4,lzxid=0xffffffffffffffff,lresp=123,llat=0,minlat=0,avglat=0,maxlat=4)
 /172.18.0.5:39912[0](queued=0,recved=1,sent=0)
 /127.0.0.1:39984[0](queued=0,recved=1,sent=0)

`
	require.Equal(t, []lab.ConnSample{
		{Member: "zk1", Remote: "127.0.0.1:48378", Session: "0x1000a3f5e2b0001", Outstanding: 3, Received: 1205, Sent: 1202},
		{Member: "zk1", Remote: "172.18.0.5:39912", Received: 1},
		{Member: "zk1", Remote: "127.0.0.1:39984", Received: 1},
	}, parseCons("zk1", out))
}
