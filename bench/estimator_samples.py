# ruff: noqa: E501  (sample content: its lines are the data)
"""Sample texts for bench_estimator.py and bench_tokens.py: several realistic pieces per kind,
a few hundred tokens each, written for these benchmarks (none of it is calibration data); the
tool schemas and tool blocks are in tool_samples.py."""

from __future__ import annotations

PROSE = [
    """Thanks for getting back to me so quickly. I went through the draft contract over the \
weekend and, overall, it looks reasonable, but there are three points I'd like us to settle \
before I sign anything.

First, the payment schedule. The draft says invoices are due within sixty days of receipt. \
That's longer than we agreed on the phone, and it's longer than I can carry on a project of \
this size. Could we go back to thirty days, with the first invoice issued when the design \
phase is approved rather than at the end of the second milestone?

Second, the scope of revisions. "Reasonable revisions" is doing a lot of work in section 4. \
I'd rather we write down a number: two rounds of revisions per deliverable are included, and \
anything beyond that is billed at the hourly rate in schedule B. It protects both of us from \
the kind of misunderstanding that tends to surface three months in, when everyone is tired.

Finally, ownership of the source files. I'm happy to transfer the final artwork on payment, \
but the working files, templates and the fonts I license myself should stay with me. If your \
team needs editable versions later, let's agree on a separate fee now instead of guessing.

None of this is meant as a deal-breaker. I'm genuinely looking forward to working with you, \
and I think the project will go better if the boring parts are nailed down early. Let me \
know if a short call on Thursday afternoon would work for you.""",
    """Most outages we have had this year did not start with a dramatic failure. They started \
with something small that nobody was watching: a disk that filled up slowly because a log \
rotation job had been disabled during a migration, a certificate that expired on a Sunday, a \
queue whose consumers fell behind by a few seconds a day until, one morning, they were hours \
behind and every downstream report was wrong.

The lesson we keep relearning is that monitoring the things that break loudly is the easy \
part. Error rates, latency and crashed processes already page someone. What hurts us is \
drift: values that are fine today, slightly worse tomorrow, and catastrophic next month. \
Drift is invisible on a dashboard that only shows the last hour, and it is boring to look \
at, which is exactly why nobody looks.

So for the next quarter we are proposing three changes. Every capacity metric (disk, \
memory, queue depth, connection pool usage) gets a weekly trend check that alerts on the \
slope, not only on the value. Every scheduled job reports its last successful run, and a job \
that has been silent for twice its interval is treated as failed. And every certificate, \
token and license with an expiry date goes into one inventory, with a reminder thirty days \
ahead and an owner who is a person rather than a team alias.

None of these ideas are new. The point is to make them routine, so that the quiet failures \
get the same attention as the loud ones.""",
    """The village sat at the end of a road that the maps still drew as a highway, though \
nobody had driven it that way in years. In spring the river rose over the lower fields and \
the farmers moved their goats to the hill behind the church; in summer the dust was so fine \
that it settled on the windowsills an hour after they were wiped.

Mara had come back for her grandmother's funeral and stayed, at first for a week, then for a \
month, and then without deciding anything at all. She took over the little shop on the \
square, which sold bread in the morning, newspapers at noon and, in the evening, whatever \
the delivery van had brought: batteries, seed packets, a crate of oranges, once an entire \
box of left-handed scissors that nobody ever bought.

People came in to talk more than to buy. The old schoolteacher explained the weather to her \
every day, always wrong and always certain. The twins from the mill argued about football \
across the counter while their mother counted coins. In the slow hours, Mara wrote down \
their stories in the back of the order book, between the price of flour and the phone \
number of the man who fixed refrigerators, and she began to understand that she had not \
stayed because of the shop at all.""",
    """Our new standing desk is designed for people who actually change position during the \
day, not just on the first week after they buy it. The motor is quiet enough for a video \
call, moves from the lowest to the highest setting in about twelve seconds, and stops \
automatically if it meets resistance, so a chair arm or a stray cable won't get crushed.

The frame is steel, powder-coated in three colors, and supports up to 120 kilograms evenly \
distributed. That is enough for two large monitors on arms, a desktop computer and a stack \
of books, with room to spare. The control panel stores four height presets, and a small \
display shows the current height in centimeters or inches.

Assembly takes most people about forty minutes with the included tools. The legs arrive \
pre-wired, and the cable tray underneath the top keeps power strips and adapters out of \
sight. If you already own a desktop you like, the frame fits tops from 120 to 180 \
centimeters wide.

Every desk comes with a five-year warranty on the frame and motor and a thirty-day trial: \
if it doesn't suit the way you work, we collect it and refund the full price, including \
delivery.""",
]

CODE = [
    '''from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class FileDigest:
    path: Path
    size: int
    sha256: str


def digest_tree(root: Path, *, pattern: str = "**/*", chunk_size: int = 1 << 16) -> list[FileDigest]:
    """Hash every regular file under ``root`` matching ``pattern``, sorted by path."""
    out: list[FileDigest] = []
    for path in sorted(root.glob(pattern)):
        if not path.is_file() or path.is_symlink():
            continue
        h = hashlib.sha256()
        with path.open("rb") as fh:
            while chunk := fh.read(chunk_size):
                h.update(chunk)
        out.append(FileDigest(path=path.relative_to(root), size=path.stat().st_size,
                              sha256=h.hexdigest()))
    return out


def changed_files(before: list[FileDigest], after: list[FileDigest]) -> dict[str, list[Path]]:
    old = {d.path: d for d in before}
    new = {d.path: d for d in after}
    return {
        "added": sorted(p for p in new if p not in old),
        "removed": sorted(p for p in old if p not in new),
        "modified": sorted(p for p in new if p in old and new[p].sha256 != old[p].sha256),
    }


if __name__ == "__main__":
    import sys

    for d in digest_tree(Path(sys.argv[1])):
        print(f"{d.sha256[:12]}  {d.size:>10}  {d.path}")
''',
    '''import { useEffect, useMemo, useState } from "react";

export interface Invoice {
  id: string;
  customer: string;
  amountCents: number;
  dueDate: string; // ISO 8601
  status: "draft" | "sent" | "paid" | "overdue";
}

function formatMoney(cents: number, currency = "EUR"): string {
  return new Intl.NumberFormat("en-GB", { style: "currency", currency }).format(cents / 100);
}

export function useInvoices(apiBase: string, token: string) {
  const [invoices, setInvoices] = useState<Invoice[]>([]);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    const controller = new AbortController();
    fetch(`${apiBase}/v1/invoices?limit=100`, {
      headers: { Authorization: `Bearer ${token}` },
      signal: controller.signal,
    })
      .then((res) => (res.ok ? res.json() : Promise.reject(new Error(`HTTP ${res.status}`))))
      .then((body) => setInvoices(body.results as Invoice[]))
      .catch((err) => {
        if (err.name !== "AbortError") setError(String(err));
      });
    return () => controller.abort();
  }, [apiBase, token]);

  const totals = useMemo(() => {
    const byStatus: Record<string, number> = {};
    for (const inv of invoices) {
      byStatus[inv.status] = (byStatus[inv.status] ?? 0) + inv.amountCents;
    }
    return Object.fromEntries(
      Object.entries(byStatus).map(([status, cents]) => [status, formatMoney(cents)]),
    );
  }, [invoices]);

  return { invoices, totals, error };
}
''',
    '''-- Monthly revenue per customer segment, with the share of the month's total and the
-- change against the previous month.
WITH monthly AS (
    SELECT
        date_trunc('month', o.created_at)::date AS month,
        c.segment,
        SUM(oi.quantity * oi.unit_price_cents) / 100.0 AS revenue
    FROM orders o
    JOIN customers c   ON c.id = o.customer_id
    JOIN order_items oi ON oi.order_id = o.id
    WHERE o.status IN ('paid', 'shipped', 'delivered')
      AND o.created_at >= now() - interval '13 months'
    GROUP BY 1, 2
)
SELECT
    month,
    segment,
    round(revenue, 2) AS revenue,
    round(100.0 * revenue / SUM(revenue) OVER (PARTITION BY month), 1) AS share_pct,
    round(
        100.0 * (revenue - LAG(revenue) OVER (PARTITION BY segment ORDER BY month))
        / NULLIF(LAG(revenue) OVER (PARTITION BY segment ORDER BY month), 0),
        1
    ) AS change_pct
FROM monthly
ORDER BY month DESC, revenue DESC;

CREATE INDEX CONCURRENTLY IF NOT EXISTS orders_created_status_idx
    ON orders (created_at, status) INCLUDE (customer_id);
''',
    '''#!/usr/bin/env bash
set -euo pipefail

# Back up every PostgreSQL database on this host to S3, keeping 14 daily copies.
BUCKET="${BACKUP_BUCKET:?set BACKUP_BUCKET}"
STAMP="$(date -u +%Y%m%dT%H%M%SZ)"
WORKDIR="$(mktemp -d)"
trap 'rm -rf "$WORKDIR"' EXIT

databases=$(psql -At -U postgres -c \\
  "SELECT datname FROM pg_database WHERE NOT datistemplate AND datname <> 'postgres'")

for db in $databases; do
  echo "[$(date -u +%H:%M:%S)] dumping $db"
  pg_dump -U postgres --format=custom --compress=9 "$db" > "$WORKDIR/$db.dump"
  aws s3 cp --only-show-errors "$WORKDIR/$db.dump" "s3://$BUCKET/$db/$STAMP.dump"
done

# Delete copies older than 14 days.
cutoff=$(date -u -d '14 days ago' +%Y%m%d)
aws s3 ls "s3://$BUCKET/" --recursive | while read -r _ _ _ key; do
  day=$(basename "$key" | cut -c1-8)
  if [[ "$day" =~ ^[0-9]{8}$ && "$day" < "$cutoff" ]]; then
    aws s3 rm --only-show-errors "s3://$BUCKET/$key"
  fi
done
echo "done: $(echo "$databases" | wc -w) databases"
''',
]


VIETNAMESE = [
    """Chào anh Minh,

Em đã xem lại bản kế hoạch triển khai hệ thống mới mà anh gửi hôm thứ Sáu. Nhìn chung em \
thấy hướng đi như vậy là hợp lý, nhưng có mấy điểm em muốn trao đổi thêm trước buổi họp \
tuần sau.

Thứ nhất là thời gian chuyển đổi dữ liệu. Theo kế hoạch, toàn bộ dữ liệu khách hàng sẽ được \
chuyển sang hệ thống mới trong một đêm cuối tuần. Em e rằng như vậy hơi gấp, vì lần thử \
nghiệm gần nhất mất gần chín tiếng mà vẫn còn lỗi ở phần lịch sử giao dịch. Em đề xuất mình \
chia thành hai đợt: đợt đầu chuyển thông tin khách hàng và hợp đồng, đợt sau mới chuyển lịch \
sử giao dịch.

Thứ hai là việc đào tạo nhân viên. Các bạn ở chi nhánh Đà Nẵng và Cần Thơ chưa được tham gia \
buổi giới thiệu nào. Nếu hệ thống chạy chính thức từ đầu tháng sau thì thời gian đào tạo còn \
rất ít. Anh xem có thể tổ chức một buổi trực tuyến vào tuần tới được không ạ?

Cuối cùng, em nghĩ mình nên chuẩn bị sẵn phương án quay lại hệ thống cũ trong trường hợp có \
sự cố nghiêm trọng. Em sẽ viết nháp quy trình này và gửi anh trước thứ Tư.

Em cảm ơn anh,
Lan""",
    """Phở là một trong những món ăn nổi tiếng nhất của Việt Nam, nhưng ít ai biết rằng mỗi \
vùng lại có một cách nấu riêng. Phở Hà Nội thường có nước dùng trong, vị ngọt thanh từ xương \
bò hầm nhiều giờ, ăn kèm hành lá, rau mùi và một chút ớt tươi. Người Hà Nội ít khi cho thêm \
tương đen hay tương ớt vào bát phở, vì họ cho rằng như thế sẽ làm mất hương vị của nước dùng.

Trong khi đó, phở miền Nam lại được ăn cùng một đĩa rau sống đầy đặn gồm giá đỗ, húng quế, \
ngò gai và chanh. Nước dùng ở đây thường đậm và ngọt hơn, và thực khách có thói quen tự nêm \
nếm thêm theo khẩu vị của mình. Không có cách nào là đúng hay sai; đó chỉ là sự khác biệt về \
thói quen và khí hậu giữa hai miền.

Điều thú vị là phở chỉ mới xuất hiện khoảng hơn một trăm năm trước, vào đầu thế kỷ hai mươi, \
ở vùng đồng bằng Bắc Bộ. Từ một món ăn đường phố của người lao động, phở dần trở thành biểu \
tượng ẩm thực của cả nước và theo chân người Việt đi khắp thế giới. Ngày nay, bạn có thể tìm \
thấy một quán phở ở gần như bất kỳ thành phố lớn nào, từ Paris đến Sydney.""",
    """Hướng dẫn cài đặt ứng dụng trên máy chủ

Trước khi bắt đầu, hãy chắc chắn rằng máy chủ của bạn đã cài đặt Python phiên bản 3.11 trở \
lên và PostgreSQL phiên bản 15. Bạn cũng cần quyền quản trị để tạo cơ sở dữ liệu và người dùng \
mới.

Bước 1: Tải mã nguồn về máy và tạo môi trường ảo. Mở cửa sổ dòng lệnh, di chuyển đến thư mục \
chứa mã nguồn và chạy lệnh tạo môi trường ảo. Sau đó kích hoạt môi trường này trước khi cài \
đặt các thư viện cần thiết.

Bước 2: Tạo tệp cấu hình. Sao chép tệp cấu hình mẫu thành tệp mới và điền địa chỉ cơ sở dữ \
liệu, khóa bí mật và địa chỉ máy chủ Redis. Không bao giờ đưa tệp này lên kho mã nguồn chung, \
vì nó chứa thông tin nhạy cảm.

Bước 3: Khởi tạo cơ sở dữ liệu. Chạy lệnh di chuyển dữ liệu để tạo các bảng, sau đó tạo tài \
khoản quản trị đầu tiên. Nếu gặp lỗi kết nối, hãy kiểm tra lại mật khẩu và cổng của \
PostgreSQL.

Bước 4: Chạy thử. Khởi động máy chủ phát triển và mở trình duyệt tại địa chỉ được hiển thị. \
Nếu trang quản trị hiện ra và bạn đăng nhập được, việc cài đặt đã hoàn tất. Khi triển khai \
thật, hãy dùng một máy chủ ứng dụng chuyên dụng thay cho máy chủ phát triển.""",
    """Sáng nay trời Hà Nội se lạnh, sương mù phủ kín mặt hồ Tây. Bà Tư dậy từ lúc bốn giờ \
để nhóm bếp than, như bà vẫn làm suốt ba mươi năm nay. Gánh xôi của bà nhỏ thôi, chỉ có xôi \
xéo, xôi lạc và xôi gấc, nhưng khách quen thì nhiều vô kể: những người công nhân đi ca sớm, \
mấy cô sinh viên ở ký túc xá gần đó, và cả ông giáo già sống một mình ở đầu ngõ.

Ai hỏi bí quyết, bà chỉ cười bảo chẳng có gì cả, gạo phải ngâm đủ lâu, đỗ phải đãi thật sạch, \
và lửa thì đừng bao giờ để to quá. Nhưng những người ăn xôi của bà lâu năm đều biết, cái làm \
họ quay lại không chỉ là hương vị. Đó là tiếng bà hỏi thăm, là nắm xôi bà lặng lẽ cho thêm \
khi thấy ai đó trông mệt mỏi, là cảm giác có một góc phố quen thuộc giữa thành phố ngày càng \
đông đúc và vội vã.

Con cái bà nhiều lần khuyên bà nghỉ ngơi, nhưng bà bảo còn đi được thì còn bán. Sáng nào \
không ra ngõ, bà thấy nhớ.""",
]

CJK = [
    """关于下个季度的工作安排，我想先说明几点。第一，新版本的发布时间定在三月底，\
所有功能必须在三月十五日之前完成测试。如果某个功能到时还没有通过测试，我们宁愿把它推迟到下一个版本，\
也不要为了赶进度而降低质量。第二，客户反馈最多的问题是系统在高峰时段响应太慢。\
运维团队已经找到了几个主要原因，包括数据库连接池太小、部分查询没有使用索引，以及缓存的过期时间设置不合理。\
这些问题需要在本季度内全部解决。第三，从四月开始，我们将试行新的值班制度，每周由两名工程师负责处理线上故障，\
其他人可以专心开发。请大家在本周五之前把自己方便值班的时间发给我，我会尽量照顾每个人的安排。\
最后，感谢大家过去三个月的努力，特别是在系统迁移期间，很多同事主动加班，保证了服务没有中断。""",
    """春天来到江南的时候，河边的柳树最先发出新芽。清晨，薄雾笼罩着小镇，石板路还带着夜里的湿气，\
早起的老人提着鸟笼慢慢走向茶馆。茶馆里已经坐满了人，有的在看报纸，有的在下棋，\
还有几个人围在一起，大声讨论昨天晚上的新闻。老板娘一边倒茶，一边和熟客们打招呼，\
她记得每个人喜欢喝什么茶、要几块点心。到了中午，阳光照在白墙黑瓦上，整个小镇显得格外安静。\
孩子们放学回家，沿着河岸追逐打闹，偶尔有一条小船从桥下划过，船夫哼着听不太清的老歌。\
对于在这里生活了一辈子的人来说，这样的日子平常得不能再平常，可是对于远道而来的游客，\
这份安静和从容，正是他们在城市里找不到的东西。""",
    """いつもお世話になっております。先日ご依頼いただいた見積書について、いくつか確認させていただきたい点がございます。\
まず、納期についてですが、ご希望の三月末までに全ての作業を完了するためには、\
二月中旬までに仕様を確定していただく必要があります。仕様の変更が後から発生した場合、\
追加の費用や納期の延長が必要になる可能性がありますので、あらかじめご了承ください。\
次に、サーバーの運用についてです。今回のお見積りには初年度の保守費用が含まれておりますが、\
二年目以降の契約につきましては、改めてご相談させていただければと存じます。\
また、データの移行作業は土日に行う予定ですが、その間はシステムをご利用いただけませんので、\
社内への周知をお願いいたします。ご不明な点がございましたら、お気軽にお問い合わせください。\
引き続きどうぞよろしくお願いいたします。""",
    """京都の秋は、一年の中でも特に美しい季節です。十一月の中旬になると、\
東山の寺院の紅葉が見頃を迎え、朝早くから多くの観光客が訪れます。\
人混みを避けたい人には、少し郊外にある小さなお寺をおすすめします。\
有名な寺ほど華やかではありませんが、苔むした庭と色づいたもみじが静かに調和していて、\
心が落ち着く時間を過ごすことができます。散策の後は、近くの茶屋で抹茶と和菓子をいただくのもいいでしょう。\
季節ごとに変わる上生菓子は見た目にも美しく、秋には栗や柿をかたどったものが並びます。\
夕方になると気温が急に下がるので、薄手の上着を一枚持っていくと安心です。""",
    """지난주 회의에서 논의한 내용을 정리해서 공유드립니다. 먼저 신규 서비스 출시 일정은 \
다음 달 둘째 주로 확정되었습니다. 개발팀은 이번 주 금요일까지 남은 기능 개발을 마무리하고, \
다음 주부터는 품질 보증팀과 함께 통합 테스트를 진행할 예정입니다. 테스트 과정에서 발견된 \
문제는 심각도에 따라 분류하여 출시 전에 반드시 해결해야 할 항목과 출시 이후에 처리할 항목으로 \
나누기로 했습니다. 또한 고객 지원팀에서 요청한 관리자 화면 개선 사항은 이번 출시에 포함하기 \
어렵다는 의견이 많았기 때문에, 다음 분기 계획에 반영하기로 했습니다. 마지막으로 모든 팀은 \
출시 당일 비상 연락망을 다시 확인해 주시기 바랍니다. 궁금한 점이 있으면 언제든지 말씀해 주세요.""",
]

# Minified JSON as APIs return it and tools pass it on: no whitespace, short keys, ids, numbers.
MINIFIED_JSON = [
    """{"object":"list","data":[{"id":"ord_7Hq2LmX9","status":"shipped","created":1801234567,"customer":{"id":"cus_Q4r8TzW1","email":"minh.tran@example.vn","country":"VN"},"items":[{"sku":"KB-75-BRN","qty":1,"unit_price":8900,"currency":"usd"},{"sku":"CBL-USBC-2M","qty":2,"unit_price":1200,"currency":"usd"}],"shipping":{"carrier":"dhl","tracking":"JD014600006789012345","eta":"2027-03-02"},"total":11300},{"id":"ord_7Hq2Ln0A","status":"pending","created":1801239981,"customer":{"id":"cus_Kp2VbN7e","email":"a.keller@example.de","country":"DE"},"items":[{"sku":"MON-27-4K","qty":1,"unit_price":32900,"currency":"eur"}],"shipping":null,"total":32900}],"has_more":true,"next_cursor":"b3JkXzdIcTJMbjBB"}""",
    """{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"Found 3 matches in 2 files"}],"matches":[{"path":"src/billing/invoices.py","line":43,"col":9,"text":"if invoice.due_date < today and invoice.status != \\"paid\\":"},{"path":"src/billing/invoices.py","line":88,"col":5,"text":"invoice.status = \\"overdue\\""},{"path":"tests/billing/test_overdue.py","line":38,"col":8,"text":"mark_overdue_invoices()"}],"truncated":false,"elapsed_ms":17}}""",
    """{"type":"FeatureCollection","features":[{"type":"Feature","id":"hn-0012","geometry":{"type":"Point","coordinates":[105.8542,21.0285]},"properties":{"name":"Hoàn Kiếm","kind":"district","population":135618,"area_km2":5.29,"tags":["old-quarter","lake","tourism"]}},{"type":"Feature","id":"hn-0031","geometry":{"type":"Point","coordinates":[105.8412,21.0368]},"properties":{"name":"Ba Đình","kind":"district","population":221893,"area_km2":9.21,"tags":["government","mausoleum"]}},{"type":"Feature","id":"sh-0007","geometry":{"type":"Point","coordinates":[121.4737,31.2304]},"properties":{"name":"黄浦区","kind":"district","population":662030,"area_km2":20.46,"tags":["外滩","南京路"]}}]}""",
    """[{"ts":"2027-02-01T09:12:44.118Z","level":"error","svc":"checkout","trace":"4bf92f3577b34da6a3ce929d0e0e4736","span":"00f067aa0ba902b7","msg":"payment intent failed","err":{"code":"card_declined","decline_code":"insufficient_funds","http":402},"attempt":2,"latency_ms":1840},{"ts":"2027-02-01T09:12:44.502Z","level":"warn","svc":"checkout","trace":"4bf92f3577b34da6a3ce929d0e0e4736","span":"b7ad6b7169203331","msg":"retry budget low","budget":{"left":1,"of":3},"latency_ms":3},{"ts":"2027-02-01T09:12:45.010Z","level":"info","svc":"cart","trace":"a1c3e5f7b9d24f6a8c0e2b4d6f8a0c2e","span":"1d3f5b7a9c2e4f60","msg":"cart restored","items":4,"latency_ms":12}]""",
]
