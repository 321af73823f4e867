//! Capture real kernel answers as golden-test fixtures.
//!
//!     cargo run -p irqlab-linux --example capture -- DEVICE OUT_DIR
//!
//! Reads only (family lookups, `napi-get`, `queue-get`, `qstats-get`,
//! `coalesce-get`) and writes each answer message, byte for byte, to
//! OUT_DIR/<name>.bin, with a hex dump on stdout. The fixtures in tests/fixtures/ were made this way.

use std::path::{Path, PathBuf};

use irqlab_linux::device::resolve;
use irqlab_linux::netlink::ethtool::{self, CoalesceGet, Header};
use irqlab_linux::netlink::genl::{self, Family, GenlMessage, GetFamily, Payload};
use irqlab_linux::netlink::message::{NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST};
use irqlab_linux::netlink::netdev::{self, NapiById, NapiDump, QueueDump};
use irqlab_linux::netlink::qstats::{QstatsDump, QstatsScope};
use irqlab_linux::socket::GenlSocket;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [device, out] = args.as_slice() else {
        return Err("usage: capture DEVICE OUT_DIR".into());
    };
    let out = PathBuf::from(out);
    std::fs::create_dir_all(&out)?;
    let ifindex = resolve(device)?;
    let mut socket = GenlSocket::open()?;

    let netdev = lookup(&mut socket, &out, netdev::NETDEV_FAMILY_NAME)?;
    let ethtool = lookup(&mut socket, &out, ethtool::ETHTOOL_FAMILY_NAME)?;

    let answers = exchange(&mut socket, netdev, NLM_F_REQUEST | NLM_F_DUMP, netdev::NETDEV_CMD_NAPI_GET, 1, NapiDump { ifindex: Some(ifindex) })?;
    save(&out, "napi_get_dump", &answers)?;
    if let Some(first) = answers.first().filter(|m| m.len() > 20 && u16::from_ne_bytes([m[4], m[5]]) == netdev) {
        let napi = GenlMessage::<netdev::Napi>::parse(first, netdev)?.payload;
        let answers = exchange(&mut socket, netdev, NLM_F_REQUEST | NLM_F_ACK, netdev::NETDEV_CMD_NAPI_GET, 1, NapiById { id: napi.id })?;
        save(&out, "napi_get_do", &answers)?;
    }
    let answers = exchange(&mut socket, netdev, NLM_F_REQUEST | NLM_F_DUMP, netdev::NETDEV_CMD_QUEUE_GET, 1, QueueDump { ifindex })?;
    save(&out, "queue_get_dump", &answers)?;
    let request = QstatsDump { ifindex, scope: QstatsScope::Queue };
    let answers = exchange(&mut socket, netdev, NLM_F_REQUEST | NLM_F_DUMP, netdev::NETDEV_CMD_QSTATS_GET, 1, request)?;
    save(&out, "qstats_get_dump", &answers)?;
    let request = CoalesceGet { header: Header::index(ifindex) };
    let answers = exchange(&mut socket, ethtool, NLM_F_REQUEST | NLM_F_ACK, ethtool::ETHTOOL_MSG_COALESCE_GET, 1, request)?;
    save(&out, "coalesce_get", &answers)?;
    Ok(())
}

fn lookup(socket: &mut GenlSocket, out: &Path, name: &str) -> Result<u16, Box<dyn std::error::Error>> {
    let answers = exchange(socket, genl::GENL_ID_CTRL, NLM_F_REQUEST | NLM_F_ACK, genl::CTRL_CMD_GETFAMILY, genl::GENL_CTRL_VERSION, GetFamily { name: name.into() })?;
    save(out, &format!("getfamily_{name}"), &answers)?;
    Ok(GenlMessage::<Family>::parse(&answers[0], genl::GENL_ID_CTRL)?.payload.id)
}

fn exchange<P: Payload>(socket: &mut GenlSocket, family: u16, flags: u16, cmd: u8, version: u8, payload: P) -> Result<Vec<Vec<u8>>, Box<dyn std::error::Error>> {
    let seq = socket.next_seq();
    let msg = GenlMessage { family, flags, seq, port: socket.port(), cmd, version, payload };
    Ok(socket.transact_raw("capture", &msg.emit(), flags & NLM_F_DUMP == NLM_F_DUMP)?)
}

fn save(out: &Path, name: &str, answers: &[Vec<u8>]) -> std::io::Result<()> {
    for (i, msg) in answers.iter().enumerate() {
        let path = out.join(format!("{name}.{i}.bin"));
        std::fs::write(&path, msg)?;
        println!("{} ({} bytes):", path.display(), msg.len());
        for chunk in msg.chunks(16) {
            println!("  {}", chunk.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" "));
        }
    }
    Ok(())
}
