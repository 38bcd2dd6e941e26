select
    c.customer_id,
    c.country_code,
    count(distinct o.order_id) as order_count,
    sum(p.amount) as revenue
from {{ ref('stg_customers') }} c
join {{ ref('stg_orders') }} o on o.customer_id = c.customer_id
join {{ ref('stg_payments') }} p on p.order_id = o.order_id
where o.status = 'shipped'
group by c.customer_id, c.country_code
